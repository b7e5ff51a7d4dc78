// One subject of bench/harness/browser-llama-prefill.mjs in its own module Worker: the npm package
// (headscope; its threaded build when threads > 1 on this isolated page; weights 'f32' or 'q8') or
// wllama (llama.cpp in wasm, its own Worker inside this one) on a GGUF file. Both run the same text:
// wllama 3's completion takes a string only (its API has no token-id input; an array prompt is refused),
// so headscope's tokens are the reference, llama.cpp's count of prompt tokens (timings.prompt_n) must
// equal theirs on every run, and the logits are compared before timing. Each run is a prefill of the
// whole text in one batch, keeping no attention map and returning nothing but what the run must:
// headscope's prefill(), wllama's completion of one greedy token (llama.cpp's server: the prompt in one
// batch, then one token sampled from the last position's logits, no further decode).
import { twoTexts } from '/common/inputs.js';
import { loadModel } from '/pkg/headscope.js';
import { Wllama } from '/wllama/esm/index.js';

let subject = null;
let turn = 0;
let lastText = null; // the text the subject ran last: never timed twice in a row (headscope would reuse it)
const QUIET = { debug() {}, log() {}, info() {}, warn: console.warn, error: console.error };

const ops = {
  async init({ kind, threads, weights, gguf, nCtx, nBatch }) {
    if (kind === 'headscope') {
      // the cheapest run that still computes every layer: no attention map kept (attentionMaps: false),
      // only the activations the views read (activations: 'views'); prefill() builds no result
      const options = { threads, weights, attentionMaps: false, activations: 'views' };
      const model = await loadModel(new URL('/model/', self.location.href), options);
      subject = { kind, model };
      return { threads: model.threads, weights: model.info.weights, simd: model.info.simd, config: model.info.config };
    }
    const wllama = new Wllama({ default: '/wllama/esm/wasm/wllama.wasm' }, { logger: QUIET, suppressNativeLog: true });
    // one batch of the whole prompt: n_batch = n_ubatch >= T; CPU only (no WebGPU); one slot. From the
    // URL through wllama's own cache (the origin's private file system), so that the file it reads is
    // on disk: in-memory Blobs of every subject's GGUF pass Chromium's blob memory limit ("Failed to fetch")
    await wllama.loadModelFromUrl(new URL(gguf, self.location.href).href, {
      n_threads: threads,
      n_ctx: nCtx,
      n_batch: nBatch,
      n_ubatch: nBatch,
      n_gpu_layers: 0,
      n_parallel: 1,
    });
    subject = { kind, wllama };
    const info = wllama.getLoadedContextInfo();
    return {
      threads: wllama.getNumThreads(),
      multiThread: wllama.isMultithread(),
      addBos: info.add_bos_token,
      context: { n_ctx: info.n_ctx, n_batch: info.n_batch, n_ubatch: info.n_ubatch },
    };
  },

  // Two texts of exactly T tokens that differ in their first token (so that running one after the other
  // is a full prefill each time, never a reuse of a cached prefix), and their ids (headscope only).
  inputs({ T }) {
    return twoTexts(subject.model, T);
  },

  // The last position's log-probabilities of `k` tokens: headscope's whole log-softmax (its k most
  // likely listed), wllama's k most likely (llama.cpp's server computes them from the raw logits
  // before sampling: n_probs with post_sampling_probs off)
  async outputs({ text, ids, k }) {
    lastText = text;
    if (subject.kind === 'headscope') {
      const r = subject.model.run(text, { attention: 'thumbnails', topK: 1 });
      const got = r.tokens.map((t) => t.id);
      if (got.length !== ids.length || got.some((id, i) => id !== ids[i])) throw new Error('headscope ran other ids');
      const z = r.logitsLast;
      let m = -Infinity,
        s = 0;
      for (const v of z) m = Math.max(m, v);
      for (const v of z) s += Math.exp(v - m);
      const lse = m + Math.log(s);
      const logprobs = Float64Array.from(z, (v) => v - lse);
      const order = Array.from(logprobs.keys())
        .sort((a, b) => logprobs[b] - logprobs[a])
        .slice(0, k);
      return { logprobs: Array.from(logprobs), top: order.map((id) => [id, logprobs[id]]) };
    }
    const r = await subject.wllama.createCompletion({
      prompt: text,
      max_tokens: 1,
      temperature: 0,
      n_probs: k,
      cache_prompt: false,
    });
    const probs = r.choices?.[0]?.logprobs?.content?.[0]?.top_logprobs;
    if (!probs) throw new Error(`wllama returned no log-probabilities: ${JSON.stringify(r).slice(0, 300)}`);
    return { top: probs.map((p) => [p.id, p.logprob]), promptTokens: r.timings?.prompt_n };
  },

  // `runs` prefills alternating between the two inputs, across calls too; the wall time of each (ms)
  // and, for wllama, llama.cpp's own prompt time (timings.prompt_ms, its decode of the batch alone)
  async time({ inputs, runs }) {
    const out = [];
    for (let i = 0; i < runs; i++) {
      if (inputs[turn % 2].text === lastText) turn++;
      const { text, ids } = inputs[turn++ % 2];
      lastText = text;
      const T = ids.length;
      const t0 = performance.now();
      if (subject.kind === 'headscope') {
        const r = subject.model.prefill(text);
        const ms = performance.now() - t0;
        if (r.tokens !== T || r.reusedTokens !== 0) throw new Error(`headscope prefilled ${JSON.stringify(r)} of ${T}`);
        out.push({ ms });
      } else {
        // the one token drawn is pinned (a logit bias of 100 on the text's second token, whole ASCII
        // text): a random model's greedy token may be a piece of a UTF-8 character, which the server
        // then fails to write as JSON ("incomplete UTF-8 string"); the draw costs the same either way
        const r = await subject.wllama.createCompletion({
          prompt: text,
          max_tokens: 1,
          temperature: 0,
          cache_prompt: false,
          logit_bias: [[ids[1], 100]],
        });
        const ms = performance.now() - t0;
        const t = r.timings;
        if (!t || t.prompt_n !== T || t.cache_n) throw new Error(`wllama prefilled ${JSON.stringify(t)} of ${T}`);
        out.push({ ms, promptMs: t.prompt_ms });
      }
    }
    return out;
  },
};

self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ id: data.id, result: await ops[data.op](data) });
  } catch (e) {
    self.postMessage({ id: data.id, error: String(e?.stack ?? e) });
  }
};

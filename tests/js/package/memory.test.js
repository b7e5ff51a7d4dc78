// The memory budget through the JavaScript API (LoadOptions.memoryLimit, HeadscopeModel.memory()):
// the budget by its definition (the limit less the weights, what the engine held before them and the
// reserve), a Llama-family context fitted to it, and refusals with their numbers that leave an open
// model working. The engine's own tests of the same: tests/cpp/io/test_config_safetensors.cpp [memory].
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { nodeWorker } from './node-worker.js';

const MB = 1 << 20;
const folder = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);
const read = (name, file) => readFileSync(new URL(file, folder(name)));
// llama-gqa (2 layers, 4 query heads) claiming a million positions: its context is what fits
function longLlama() {
  const config = JSON.parse(read('llama-gqa', 'config.json'));
  config.max_position_embeddings = 1000000;
  return {
    config: JSON.stringify(config),
    weights: new Uint8Array(read('llama-gqa', 'model.safetensors')),
    tokenizer: read('llama-gqa', 'tokenizer.json').toString(),
  };
}
const open = [];
after(() => {
  for (const m of open) m.dispose();
});

test('memory(): the activations budget is the limit less the weights, what was in use and the reserve', async () => {
  const m = await loadModel(longLlama(), { memoryLimit: 160 * MB, threads: 1 });
  open.push(m);
  const u = m.memory();
  assert.equal(u.limitBytes, 160 * MB);
  assert.equal(u.reserveBytes, 64 * MB); // a sixteenth of the limit, at least 64 MB
  assert.ok(u.inUseAtLoadBytes > 0, 'the tokenizer and the module were in use before the weights');
  assert.equal(u.activationBudgetBytes, u.limitBytes - u.weightBytes - u.inUseAtLoadBytes - u.reserveBytes);
  assert.equal(u.contextTokens, m.info.config.nPositions);
  // the maps are kept (2 x 4 x T² floats): they alone bound the context from above
  assert.ok(u.contextTokens <= Math.sqrt(u.activationBudgetBytes / 32));
  assert.ok(u.contextTokens > 100 && u.bytesAtContext <= u.activationBudgetBytes);
  // a text past the context is cut to it, not refused, and stays within the budget
  const r = m.run(' ab'.repeat(u.contextTokens + 40));
  assert.ok(r.T <= u.contextTokens && r.droppedTokens > 0);
  assert.ok(m.memory().activationBytes <= u.activationBudgetBytes);
});

test('a model that leaves no room for a text is refused with the numbers; the open one keeps working', async () => {
  const kept = await loadModel(longLlama(), { threads: 1 });
  open.push(kept);
  const before = kept.run('one two three').logitsLast;
  // a limit of what the engine holds now and 64 MB: the weights fit, the reserve takes the rest
  const tight = (await wasmHeapUsedBytes()) + 64 * MB;
  await assert.rejects(
    loadModel(longLlama(), { memoryLimit: tight }),
    /this model leaves 0 MB for a text's activations \(the memory limit \d+ MB less 0 MB of weights, \d+ MB in use before them and 64 MB kept free\), and 64 tokens need \d+ KB/,
  );
  // weights beyond the limit: refused before any is read, with the sizes
  await assert.rejects(
    loadModel(longLlama(), { memoryLimit: 1024 }),
    /needs about .* of wasm memory .*the limit is 0\.0 GB/,
  );
  assert.deepEqual(kept.run('one two three').logitsLast, before);
  // the same refusal from a worker's engine, and the worker's model is still there to use
  const w = await loadModelInWorker(longLlama(), { worker: nodeWorker(), threads: 1, memoryLimit: 160 * MB });
  open.push(w);
  assert.equal((await w.memory()).limitBytes, 160 * MB);
  await assert.rejects(
    loadModelInWorker(longLlama(), { worker: nodeWorker(), memoryLimit: 1024 }),
    /the limit is 0\.0 GB/,
  );
  assert.deepEqual((await w.run('one two three')).logitsLast, before);
});

test('memoryLimit is checked', async () => {
  for (const bad of [-1, 1.5, '96', NaN])
    await assert.rejects(loadModel(longLlama(), { memoryLimit: bad }), /memoryLimit must be a whole number of bytes/);
});

// LoadOptions.activations: the views' alone give the same logits to the bit and the same maps within
// the rounding of their F16 queries (the engine's tests/cpp/model/test_activations.cpp checks every
// view against a float64 reference of that rule), cost less, and the analyses that need every layer's
// activations reject naming the option; 'auto' switches past a quarter of the limit.
test("activations: 'views' keeps what the views read, the same logits; 'auto' switches at a quarter of the limit", async () => {
  const text = 'The chef, who trained in Paris, cooked the meal quickly.';
  const all = await loadModel(longLlama(), { threads: 1, attentionMaps: false, memoryLimit: 512 * MB });
  const views = await loadModel(longLlama(), {
    threads: 1,
    attentionMaps: false,
    memoryLimit: 512 * MB,
    activations: 'views',
  });
  open.push(all, views);
  const a = all.run(text);
  const b = views.run(text);
  assert.deepEqual(b.logitsLast, a.logitsLast);
  // Each map row within the bound the engine states (model.hpp, ActivationStorage): the views keep q as
  // F16(q / s) * s, s <= 2 max|q| of the row's query heads, so each q_i moves by at most 2^-11 |q_i| +
  // 2^-25 s; both models then compute the scores in float32 with the same kernel, each within
  // gamma(HS) sum |q_i k_i| / sqrt(HS) of exact. So each score moves by at most D = sum (2^-11 |q_i| +
  // 2^-25 s + 2 gamma |q_i|) |k_i| / sqrt(HS), and each weight p by at most p (exp(2 D + (t + 4) 2^-23) - 1),
  // the last term the two softmaxes' own roundings; 1e-9 for weights that underflow. q and k: the
  // kept-whole model's, by inspectHead.
  const { nLayer: L, nHead: NH } = all.info.config;
  const T = a.T;
  for (let l = 0; l < L; l++) {
    const heads = Array.from({ length: NH }, (_, h) => all.inspectHead(text, l, h));
    const HS = heads[0].headSize,
      u = 2 ** -24,
      gamma = (HS * u) / (1 - HS * u);
    for (let t = 0; t < T; t++) {
      let most = 0;
      for (const hi of heads) for (let i = 0; i < HS; i++) most = Math.max(most, Math.abs(hi.q[t * HS + i]));
      const s = 2 * most;
      for (let h = 0; h < NH; h++) {
        const { q, k } = heads[h];
        let D = 0;
        for (let j = 0; j <= t; j++) {
          let d = 0;
          for (let i = 0; i < HS; i++)
            d += (Math.abs(q[t * HS + i]) * (2 ** -11 + 2 * gamma) + 2 ** -25 * s) * Math.abs(k[j * HS + i]);
          D = Math.max(D, d / Math.sqrt(HS));
        }
        const slack = Math.expm1(2 * D + (t + 4) * 2 ** -23);
        for (let j = 0; j < T; j++) {
          const at = ((l * NH + h) * T + t) * T + j,
            want = a.attentionAll[at],
            got = b.attentionAll[at];
          assert.ok(
            Math.abs(got - want) <= want * slack + 1e-9,
            `layer ${l} head ${h} row ${t} key ${j}: ${got} vs ${want} (bound ${want * slack + 1e-9})`,
          );
        }
      }
    }
  }
  const ua = all.memory(),
    ub = views.memory();
  assert.equal(ua.activations, 'all');
  assert.equal(ub.activations, 'views');
  assert.equal(ub.viewsOnly, true);
  assert.equal(ub.fullActivationTokens, 0);
  assert.equal(ua.fullActivationTokens, ua.contextTokens);
  assert.ok(ub.activationBytes < ua.activationBytes, `${ub.activationBytes} < ${ua.activationBytes}`);
  assert.ok(
    ub.contextTokens >= ua.contextTokens,
    'the views alone reach at least as far (here both reach the 32,768 cap)',
  );
  assert.throws(
    () => views.inspectHead(text, 0, 0),
    /looking inside a head needs every layer's activations.*activations "views"/,
  );
  assert.throws(() => views.logitAttribution(2, 5), /logit attribution needs every layer's/);
  assert.deepEqual(views.run(text).logitsLast, a.logitsLast, 'the model keeps working after a refusal');
  // 'auto' with maps kept (2 x 4 x T² floats): the limit is what the engine holds now, the 64 MB
  // reserve and 160 MB, so that a quarter of it (about 1,500 tokens of maps) is less than the budget
  const limit = (await wasmHeapUsedBytes()) + 224 * MB;
  const auto = await loadModel(longLlama(), { threads: 1, memoryLimit: limit, activations: 'auto' });
  open.push(auto);
  const full = auto.memory().fullActivationTokens;
  assert.ok(full > 64 && full < auto.memory().contextTokens, `kept whole up to ${full} tokens`);
  // a text within the line keeps everything, one past it the views' alone (the exact line: the engine's test)
  const words = (n) => ' ab'.repeat(n);
  const short = auto.run(words(Math.floor(full / 4)));
  assert.ok(short.T <= full);
  assert.equal(auto.memory().viewsOnly, false, `${short.T} tokens`);
  const long = auto.run(words(full));
  assert.ok(long.T > full);
  assert.equal(auto.memory().viewsOnly, true, `${long.T} tokens`);
  assert.throws(
    () => auto.logitAttribution(1, 5),
    new RegExp(`every layer's up to ${full} tokens, this text has ${long.T}`),
  );
  assert.ok(auto.memory().activationBytes > 0);
  await assert.rejects(
    loadModel(longLlama(), { activations: 'lean' }),
    /activations must be 'all', 'views' or 'auto', got 'lean'/,
  );
});

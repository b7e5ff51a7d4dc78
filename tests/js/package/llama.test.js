// Llama-family folders through the JavaScript API: loadModel() from a folder URL (config.json says
// model_type, then tokenizer.json is fetched), from buffers ({ config, weights, tokenizer }), and in
// the Worker; results against the float64 PyTorch references of tests/fixtures/models/llama-*
// (scripts/fixtures/ (reference.py, inside.py, greedy.py)), the grouping of query heads over key/value heads in info, and
// the tokenizer's BOS.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadModel } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { nodeWorker } from './node-worker.js';

const MODELS = ['llama-gqa', 'llama-mqa', 'qwen3-qknorm', 'llama-mha'];
const folder = (name) => new URL(`../../fixtures/models/${name}/`, import.meta.url);
const reference = (name) => JSON.parse(readFileSync(new URL('reference.json', folder(name)), 'utf8'));
const open = [];
after(() => {
  for (const m of open) m.dispose();
});

// The tolerances of the C++ tests against these references (tests/cpp/model/reference_checks.hpp; the
// references' float32 PyTorch runs differ by at most 2.1e-5 in logits and 3.6e-6 in attention,
// tests/fixtures/README.md): logits 1e-4 + 1e-4 |ref|, attention probabilities 5e-5.
function assertClose(got, want, abs, rel, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++)
    assert.ok(Math.abs(got[i] - want[i]) <= abs + rel * Math.abs(want[i]), `${what}[${i}]: ${got[i]} vs ${want[i]}`);
}

// the cases whose whole text fits the reference's cut (the first is cut to 24 tokens)
function checkRun(model, name) {
  const ref = reference(name);
  let checked = 0;
  for (const c of ref.cases) {
    const ids = model.tokenize(c.text).map((t) => t.id);
    assert.deepEqual(ids.slice(0, c.ids.length), c.ids, `${name}: "${c.text}" tokenizes to the reference's ids`);
    if (ids.length !== c.ids.length) continue;
    const r = model.run(c.text);
    assert.equal(r.T, c.T);
    assertClose(r.logitsLast, c.logits_last, 1e-4, 1e-4, `${name} "${c.text}" logitsLast`);
    const { nLayer, nHead } = model.info.config;
    const att = [];
    for (let l = 0; l < nLayer; l++) for (let h = 0; h < nHead; h++) att.push(...r.attention(l, h));
    assertClose(att, c.attention, 5e-5, 0, `${name} "${c.text}" attention of every query head`);
    checked++;
  }
  assert.ok(checked >= 3, `${name}: ${checked} cases checked`);
}

for (const name of MODELS) {
  test(`${name}: a folder URL loads with tokenizer.json and equals float64 PyTorch; the same from buffers and in the Worker`, async () => {
    const model = await loadModel(folder(name));
    open.push(model);
    const config = JSON.parse(readFileSync(new URL('config.json', folder(name)), 'utf8'));
    const c = model.info.config;
    assert.equal(c.modelType, config.model_type);
    assert.equal(c.nHead, config.num_attention_heads);
    assert.equal(c.nKvHead, config.num_key_value_heads);
    assert.equal(c.headSize, config.head_dim);
    assert.equal(c.tiedEmbeddings, !!config.tie_word_embeddings);
    assert.equal(
      c.kvCacheBytesPerToken,
      2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4,
    );
    checkRun(model, name);

    const read = (f) => readFileSync(new URL(f, folder(name)));
    const buffers = await loadModel({
      config: read('config.json'),
      weights: read('model.safetensors'),
      tokenizer: read('tokenizer.json'),
    });
    open.push(buffers);
    const worker = await loadModelInWorker(folder(name), { worker: nodeWorker() });
    open.push(worker);
    const text = 'Line 1\nLine 22\n\t3.14';
    const a = model.run(text),
      b = buffers.run(text),
      w = await worker.run(text);
    // the same wasm on the same files: the same floats
    assert.deepEqual(b.logitsLast, a.logitsLast);
    assert.deepEqual(w.logitsLast, a.logitsLast);
    assert.deepEqual(w.attentionAll, a.attentionAll);
  });
}

test("Llama 3's template puts <|begin_of_text|> first, an empty span; Qwen3's adds nothing", async () => {
  const llama = await loadModel(folder('llama-gqa'));
  const qwen = await loadModel(folder('qwen3-qknorm'));
  open.push(llama, qwen);
  const [bos, ...rest] = llama.tokenize('The chef');
  assert.equal(bos.text, '<|begin_of_text|>');
  assert.deepEqual([bos.start, bos.end], [0, 0]);
  assert.equal(rest.map((t) => 'The chef'.slice(t.start, t.end)).join(''), 'The chef');
  const q = qwen.tokenize('The chef');
  assert.equal(q.map((t) => 'The chef'.slice(t.start, t.end)).join(''), 'The chef');
  assert.equal(q[0].start, 0);
  assert.ok(q[0].end > 0);
  // a run sees those tokens
  assert.deepEqual(
    llama.run('The chef').tokens.map((t) => t.id),
    [bos, ...rest].map((t) => t.id),
  );
});

test("inspectHead on a query head that shares its key/value head: k and v are the shared head's", async () => {
  const model = await loadModel(folder('llama-gqa'));
  open.push(model);
  const text = 'Line 1\nLine 22';
  // query heads 0 and 1 read key/value head 0; 2 and 3 read key/value head 1
  const [h0, h1, h2] = [0, 1, 2].map((h) => model.inspectHead(text, 1, h));
  assert.equal(h0.norm, 'RMSNorm');
  assert.equal(h0.rotary, true);
  assert.deepEqual(h1.k, h0.k);
  assert.deepEqual(h1.v, h0.v);
  assert.notDeepEqual(h1.q, h0.q);
  assert.notDeepEqual(h2.k, h0.k);
});

test('bad Llama-family sources are Errors naming the problem', async () => {
  const read = (f) => readFileSync(new URL(f, folder('llama-gqa')));
  await assert.rejects(
    loadModel({ config: read('config.json'), weights: read('model.safetensors') }),
    /missing "vocab"|missing "tokenizer"/,
  );
  await assert.rejects(
    loadModel({ config: read('config.json'), weights: read('model.safetensors'), tokenizer: '{"model": 1}' }),
    /tokenizer\.json/,
  );
  const config = JSON.parse(read('config.json'));
  config.num_key_value_heads = 3;
  await assert.rejects(
    loadModel({
      config: JSON.stringify(config),
      weights: read('model.safetensors'),
      tokenizer: read('tokenizer.json'),
    }),
    /not a multiple of num_key_value_heads/,
  );
  // the split of a logit through the final RMSNorm: its parts add up to the logit
  const model = await loadModel(folder('llama-mqa'));
  open.push(model);
  const r = model.run('The chef');
  const a = model.logitAttribution(r.T - 1, 7);
  const sum =
    a.embedding +
    a.heads.reduce((s, x) => s + x, 0) +
    a.mlp.reduce((s, x) => s + x, 0) +
    a.attnBias.reduce((s, x) => s + x, 0) +
    a.lnBias;
  // float32 logits of ~3 from C = 20 terms: 1e-4 covers the float32 rounding
  // (tests/cpp/model/test_inside.cpp derives it)
  assert.ok(Math.abs(sum - r.logitsLast[7]) <= 1e-4 * (1 + Math.abs(r.logitsLast[7])), `${sum} vs ${r.logitsLast[7]}`);
});

test('a Llama-family checkpoint trains (createTrainer({ init })), exports its tokenizer.json and reloads; its heads measure', async () => {
  const { createTrainer } = await import('../../../dist/headscope.js');
  const read = (f) => readFileSync(new URL(f, folder('llama-gqa')));
  const init = { config: read('config.json'), weights: read('model.safetensors'), tokenizer: read('tokenizer.json') };
  const trainer = await createTrainer({
    init,
    task: 'text',
    text: 'The chef, who trained in Paris, cooked the meal quickly. '.repeat(8),
    seqLen: 16,
    batchSize: 2,
    lr: 3e-3,
    steps: 40,
  });
  try {
    const losses = trainer.step(40);
    assert.equal(losses.length, 40);
    // windows of one sentence repeated, 40 AdamW steps at lr 3e-3: the backward brings the loss of this
    // random checkpoint (about 10.5 nats) down by nats (the precision of the gradients is the C++ golden
    // tests'; this checks the package's path to them)
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean([...losses.slice(0, 5)]),
      last = mean([...losses.slice(35)]);
    assert.ok(last < first - 2, `loss ${first} -> ${last}`);
    const files = trainer.export();
    assert.deepEqual(Object.keys(files).sort(), ['config', 'tokenizer', 'weights']);
    assert.equal(JSON.parse(files.config).model_type, 'llama');
    assert.equal(files.tokenizer, read('tokenizer.json').toString('utf8'));
    // the export is the trained model: on the sentence it trained on, its mean next-token loss (the
    // head measurement's loss with every head on) is nats below the checkpoint's it started from
    const back = await loadModel(files);
    open.push(back);
    const start = await loadModel(folder('llama-gqa'));
    open.push(start);
    const SENT = 'The chef, who trained in Paris, cooked the meal quickly.';
    const after = (await back.measureHeads(SENT, { randomOrders: 0 })).loss;
    const before = (await start.measureHeads(SENT, { randomOrders: 0 })).loss;
    assert.ok(after < before - 2, `loss on the training sentence ${before} -> ${after}`);
  } finally {
    trainer.dispose();
  }
  // a Llama-family init without its tokenizer says what it needs
  await assert.rejects(
    async () => createTrainer({ init: { config: init.config, weights: init.weights, vocab: '{}', merges: '' } }),
    /needs its tokenizer/,
  );
  const model = await loadModel(folder('llama-gqa'));
  open.push(model);
  const r = await model.measureHeads('The chef, who trained in Paris, cooked the meal quickly.', { randomOrders: 1 });
  assert.equal(r.gateGrad.length, 8);
  assert.ok(r.gateGrad.every(Number.isFinite) && Number.isFinite(r.loss));
});

test("writing past the context keeps the BOS first, with the CLI's ids, on both threads", async () => {
  const { execFileSync } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const cli = ['build/native-release/headscope', 'build/native-debug/headscope']
    .map((p) => fileURLToPath(new URL(`../../../${p}`, import.meta.url)))
    .find(existsSync);
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  const prompt = 'The chef, who trained in Paris, cooked'; // 27 tokens with the BOS; context 32
  const doc = JSON.parse(
    execFileSync(cli, [
      'generate',
      '--model',
      fileURLToPath(folder('llama-gqa')),
      '--text',
      prompt,
      '--tokens',
      '12',
      '--temperature',
      '0',
      '--json',
    ]),
  );
  const model = await loadModel(folder('llama-gqa'));
  const worker = await loadModelInWorker(folder('llama-gqa'), { worker: nodeWorker() });
  open.push(model, worker);
  assert.equal(model.info.config.prefixTokens, 1);
  for (const m of [model, worker]) {
    let last = null;
    const r = await m.generate(prompt, {
      maxTokens: 12,
      temperature: 0,
      onToken: ({ result }) => {
        last = result;
      },
    });
    assert.deepEqual(r.generatedIds, doc.generated);
    // the last token's result: a cut window, the BOS still first, then the sequence's last tokens
    assert.ok(last.droppedTokens > 0, 'the writing went past the context');
    assert.equal(last.tokens[0].text, '<|begin_of_text|>');
    assert.equal(last.tokens.length, last.T);
    const ids = r.tokens.map((t) => t.id);
    assert.deepEqual(
      last.tokens.slice(1).map((t) => t.id),
      ids.slice(ids.length - last.T + 1),
    );
  }
});

test('a folder URL of a family the engine does not run is named by its model_type, with nothing else fetched', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { pathToFileURL } = await import('node:url');
  const dir = mkdtempSync(join(tmpdir(), 'headscope-mistral-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'mistral', hidden_size: 64 }));
  // no weights, no tokenizer: a fetch of either would fail with "cannot read"
  await assert.rejects(loadModel(pathToFileURL(`${dir}/`)), /model_type "mistral" is not supported yet/);
  // a Llama-family config with GPT-2's tokenizer files is refused: its tokenizer is tokenizer.json
  const read = (f) => readFileSync(new URL(f, folder('llama-gqa')));
  await assert.rejects(
    loadModel({ config: read('config.json'), weights: read('model.safetensors'), vocab: '{}', merges: '' }),
    /tokenizer is its tokenizer\.json/,
  );
});

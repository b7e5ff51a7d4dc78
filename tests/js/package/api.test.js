// The JavaScript API in Node: shapes, attention invariants, ablation, errors, dispose, and the
// results against the native CLI's --json output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadModel, shippedModels, defaultModelName, attentionIndex } from '../../../dist/headscope.js';
import { repo, testModelUrl, testModelDir, defaultModelShipped } from './helpers.js';

const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
const model = await loadModel(testModelUrl);

test('info describes the model and the SIMD build', () => {
  const { config, parameterCount, simd } = model.info;
  assert.ok(config.nLayer >= 1 && config.nHead >= 1);
  assert.equal(config.headSize * config.nHead, config.nEmbd);
  assert.ok(parameterCount > config.vocabSize * config.nEmbd);
  // node 20 without --experimental-wasm-relaxed-simd: the SIMD128 build (the relaxed one: below)
  assert.deepEqual(simd, { arch: 'sse4.1', floatLanes: 4, simd: true, relaxedMadd: false });
});

test('shapes, rows summing to 1 and causal zeros', () => {
  const r = model.run(SENTENCE);
  const { nLayer: L, nHead: H } = model.info.config;
  const T = r.tokens.length;
  assert.equal(r.T, T);
  assert.equal(r.attentionAll.length, L * H * T * T);
  assert.equal(r.contributionNorms.length, L * H * T);
  assert.equal(r.logitsLast.length, model.info.config.vocabSize);
  assert.equal(r.topNext.length, 10);
  for (let l = 0; l < L; l++)
    for (let h = 0; h < H; h++) {
      const a = r.attention(l, h);
      assert.equal(a.length, T * T);
      for (let t = 0; t < T; t++) {
        let sum = 0;
        for (let j = 0; j < T; j++) {
          if (j > t) assert.equal(a[t * T + j], 0, `layer ${l} head ${h}: future token ${j} seen from ${t}`);
          sum += a[t * T + j];
        }
        // t+1 float32 probabilities: 1e-5 covers their rounding (tests/cpp/model/test_model.cpp)
        assert.ok(Math.abs(sum - 1) < 1e-5, `layer ${l} head ${h} row ${t} sums to ${sum}`);
      }
      assert.equal(r.headContribution(l, h).length, T);
    }
  // top predictions are sorted probabilities
  for (let i = 1; i < r.topNext.length; i++) assert.ok(r.topNext[i - 1].prob >= r.topNext[i].prob);
});

test('token spans index the input string', () => {
  const text = 'Héllo wörld 😀 — chef';
  const r = model.run(text);
  assert.equal(r.tokens[0].start, 0);
  assert.equal(r.tokens.at(-1).end, text.length);
  for (let i = 1; i < r.tokens.length; i++) assert.ok(r.tokens[i].start >= r.tokens[i - 1].start);
  // ASCII tokens map back exactly onto their text
  for (const t of r.tokens) if (/^[\x20-\x7e]+$/.test(t.text)) assert.equal(text.slice(t.start, t.end), t.text);
});

test('typing at the end reuses the cache and equals a fresh run', async () => {
  model.run('The chef, who trained');
  const typed = model.run('The chef, who trained in');
  assert.ok(typed.reusedTokens > 0);
  const fresh = await loadModel(testModelUrl);
  const full = fresh.run('The chef, who trained in');
  fresh.dispose();
  assert.deepEqual(typed.attentionAll, full.attentionAll); // bit for bit, as in the C++ test
  assert.deepEqual(typed.logitsLast, full.logitsLast);
});

test('reuse: a typed token copies only its new attention rows into the earlier result, which then equals a fresh run', async () => {
  const fresh = await loadModel(testModelUrl);
  const { nLayer: L, nHead: H } = model.info.config;
  // every head's T x T attention, through the accessor (independent of the block width)
  const heads = (r) => Array.from({ length: L * H }, (_, i) => Array.from(r.attention(Math.floor(i / H), i % H)));
  let shown = model.run('The chef, who', { reuse: null });
  assert.equal(shown.stride, shown.T, 'no reuse: the documented [L, H, T, T] layout');
  let previousBuffer = null;
  for (const text of ['The chef, who t', 'The chef, who tr', 'The chef, who trained', 'The chef, who trai', 'A cook']) {
    const before = shown;
    shown = model.run(text, { reuse: before });
    const expected = fresh.run(text);
    // exact: rows before the first changed token are the same engine's same numbers (see the C++ test)
    assert.deepEqual(heads(shown), heads(expected), text);
    assert.deepEqual(shown.contributionNorms, expected.contributionNorms);
    assert.deepEqual(shown.logitsLast, expected.logitsLast);
    assert.deepEqual(shown.tokens, expected.tokens, `${text}: the tokens held put back before the new ones`);
    const sharedTokens = before.tokens.findIndex((t, i) => shown.tokens[i]?.id !== t.id);
    const shared = sharedTokens < 0 ? Math.min(before.T, shown.T) : sharedTokens;
    if (shared > 0 && shown.T <= before.stride) {
      // only the changed rows came out of the engine; the buffer is the earlier result's
      assert.equal(shown.rowsFrom, shared, `${text}: rows from the first changed token`);
      assert.equal(shown.attentionAll, before.attentionAll);
      assert.throws(() => before.attention(0, 0), /updated by a later run/);
    } else {
      assert.equal(shown.rowsFrom, 0, `${text}: nothing shared, a full copy`);
    }
    assert.ok(
      shown.stride >= shown.T + 16 || shown.stride === model.info.config.nPositions,
      `room to type: stride ${shown.stride} at T ${shown.T}`,
    );
    if (text === 'A cook') assert.notEqual(shown.attentionAll, previousBuffer, 'a new text starts a new buffer');
    // the exported index reads the wide blocks: the last query's weights as attention() has them
    const q = shown.T - 1,
      last = shown.attention(L - 1, H - 1).subarray(q * shown.T, (q + 1) * shown.T);
    assert.deepEqual(
      Array.from(last, (_, k) => shown.attentionAll[attentionIndex(shown, L - 1, H - 1, q, k)]),
      Array.from(last),
    );
    previousBuffer = shown.attentionAll;
  }
  // reserve(): room ahead of time; growing reports that the cache is gone
  assert.equal(fresh.reserve(1), false);
  fresh.reserve(model.info.config.nPositions);
  assert.equal(fresh.reserve(model.info.config.nPositions), false, 'the room made a moment ago needs no growth');
  assert.throws(() => fresh.reserve(0), /positive integer/);
  // different switched-off heads share no rows
  const ablated = model.run('A cook', { reuse: shown, ablate: [[0, 0]] });
  assert.equal(ablated.rowsFrom, 0);
  assert.deepEqual(heads(ablated), heads(fresh.run('A cook', { ablate: [[0, 0]] })));
  // a text past the context: the window's ids can repeat with another count dropped before them,
  // and the tokens are then other spans of the text (each token's start and end as a fresh run's)
  const repeated = ' a'.repeat(2 * model.info.config.nPositions);
  const past = model.run(repeated);
  assert.ok(past.droppedTokens > 0);
  const typed = model.run(`${repeated} b`, { reuse: past });
  const want = fresh.run(`${repeated} b`);
  assert.notEqual(typed.droppedTokens, past.droppedTokens, 'the window moved');
  assert.deepEqual(typed.tokens, want.tokens);
  assert.deepEqual(typed.contributionNorms, want.contributionNorms);
  // a thumbnails run given a result with maps (or the other way round) leaves it whole
  const withMaps = model.run('The chef, who');
  const norms = withMaps.contributionNorms.slice();
  const thumbs = model.run('The chef, wha', { attention: 'thumbnails', reuse: withMaps });
  assert.deepEqual(thumbs.tokens, fresh.run('The chef, wha').tokens);
  assert.deepEqual(withMaps.contributionNorms, norms);
  assert.doesNotThrow(() => withMaps.attention(0, 0), 'not superseded by a run of the other kind');
  const mapsAgain = model.run('The chef, whi', { reuse: thumbs });
  assert.deepEqual(mapsAgain.contributionNorms, fresh.run('The chef, whi').contributionNorms);
  assert.notEqual(thumbs.contributionNorms, mapsAgain.contributionNorms);
  fresh.dispose();
});

test('ablating a head changes predictions; ablating nothing changes nothing', () => {
  const base = model.run(SENTENCE);
  const none = model.run(SENTENCE, { ablate: [] });
  assert.deepEqual(none.logitsLast, base.logitsLast);
  const ablated = model.run(SENTENCE, {
    ablate: [
      [0, 0],
      [model.info.config.nLayer - 1, 1],
    ],
  });
  let maxDiff = 0;
  for (let i = 0; i < base.logitsLast.length; i++)
    maxDiff = Math.max(maxDiff, Math.abs(base.logitsLast[i] - ablated.logitsLast[i]));
  assert.ok(maxDiff > 1e-3, `ablation moved logits by only ${maxDiff}`);
  assert.ok(ablated.headContribution(0, 0).every((x) => x === 0));
  // layer 0's attention is computed before any ablation takes effect
  assert.deepEqual(ablated.attention(0, 0), base.attention(0, 0));
});

test('loss on the text with allLogits', () => {
  const r = model.run(SENTENCE, { allLogits: true });
  assert.ok(Number.isFinite(r.loss) && r.loss > 0);
  const one = model.run('a', { allLogits: true });
  assert.ok(Number.isNaN(one.loss));
});

test('results equal the native CLI --json output', () => {
  const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);
  assert.ok(cli, 'native CLI not built (scripts/test.sh builds it first)');
  const out = JSON.parse(
    execFileSync(cli, ['run', '--model', testModelDir, '--text', SENTENCE, '--json'], { maxBuffer: 1 << 28 }),
  );
  const r = model.run(SENTENCE);
  assert.deepEqual(
    r.tokens.map((t) => t.id),
    out.ids,
  );
  assert.deepEqual(
    r.tokens.map((t) => t.text),
    out.tokens,
  );
  // Native (SSE2/AVX, -O1 or -O3) and wasm SIMD128 builds run the same kernels with different
  // instruction selection and tile widths, so float32 sums differ in order: logits agree to
  // 1e-4 relative + 1e-4 absolute (as against PyTorch), attention to 1e-5 absolute.
  out.logits_last.forEach((x, i) =>
    assert.ok(Math.abs(x - r.logitsLast[i]) <= 1e-4 + 1e-4 * Math.abs(x), `logit ${i}: ${x} vs ${r.logitsLast[i]}`),
  );
  const T = r.T,
    { nLayer: L, nHead: H } = model.info.config;
  for (let l = 0; l < L; l++)
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let j = 0; j < T; j++) {
          const x = out.attention[l][h][t][j],
            y = r.attentionAll[((l * H + h) * T + t) * T + j];
          assert.ok(Math.abs(x - y) <= 1e-5, `attention ${l},${h},${t},${j}: ${x} vs ${y}`);
        }
});

test('bad inputs throw Errors with messages', async () => {
  for (const bad of [42, null, undefined, {}, ['a']])
    assert.throws(() => model.run(bad), { name: 'Error', message: /text must be a string/ });
  assert.throws(() => model.run(''), { message: /text is empty/ });
  assert.throws(() => model.run('x', { ablate: [[99, 0]] }), { message: /layer 99 is outside/ });
  assert.throws(() => model.run('x', { ablate: [[0]] }), { message: /\[layer, head\] pairs/ });
  assert.throws(() => model.run('x', { ablate: 'all' }), { message: /ablate must be an array/ });
  assert.throws(() => model.run('x').attention(0, 999), { message: /head 999 is outside/ });
  await assert.rejects(loadModel('no-such-model'), { message: /unknown model "no-such-model": not a shipped model/ });
  // the four files are fetched in parallel: the Error names whichever failed first
  await assert.rejects(loadModel(new URL('file:///nonexistent/folder/')), {
    message:
      /^cannot read file:\/\/\/nonexistent\/folder\/(config\.json|model\.safetensors|vocab\.json|merges\.txt): ENOENT/,
  });
  await assert.rejects(loadModel(42), { message: /model source must be/ });
  await assert.rejects(loadModel({ config: '{}' }), { message: /missing "weights"/ });
  const files = {
    config: readFileSync(new URL('config.json', testModelUrl)),
    weights: readFileSync(new URL('model.safetensors', testModelUrl)),
    vocab: readFileSync(new URL('vocab.json', testModelUrl)),
    merges: readFileSync(new URL('merges.txt', testModelUrl)),
  };
  const corrupt = new Uint8Array(files.weights);
  corrupt.fill(0x41, 8, 40); // clobber the start of the JSON header
  await assert.rejects(loadModel({ ...files, weights: corrupt }), {
    name: 'Error',
    message: /model\.safetensors: header is not valid JSON/,
  });
  await assert.rejects(loadModel({ ...files, weights: files.weights.subarray(0, 1000) }), {
    message: /model\.safetensors/,
  });
  await assert.rejects(loadModel({ ...files, config: '{"n_embd": 5' }), { message: /config\.json: not valid JSON/ });
  const ok = await loadModel({ ...files, name: 'from-buffers' });
  assert.equal(ok.info.name, 'from-buffers');
  ok.dispose();
});

test('dispose: later calls throw a clear Error; disposing twice is fine', async () => {
  const m = await loadModel(testModelUrl);
  m.dispose();
  m.dispose();
  assert.equal(m.disposed, true);
  assert.throws(() => m.run('x'), { message: /disposed/ });
  assert.throws(() => m.info, { message: /disposed/ });
  assert.throws(() => m.tokenize('x'), { message: /disposed/ });
});

test(
  'shipped model names and the default',
  { skip: !defaultModelShipped && 'the default model is not built into dist/ yet' },
  async () => {
    assert.ok(shippedModels.includes(defaultModelName));
    const m = await loadModel();
    assert.equal(m.info.name, defaultModelName);
    assert.ok(m.run(SENTENCE).T > 5);
    m.dispose();
  },
);

test('prefill then run equals one run, bit for bit (how the worker runs long texts in steps)', async () => {
  const text = 'The chef, who trained in Paris, cooked the meal quickly. The guests waited in the garden.';
  const fresh = await loadModel(testModelUrl);
  const whole = fresh.run(text, { allLogits: true });
  fresh.run('Something else entirely.'); // the cache now holds another text
  const cut = text.indexOf(' cooked');
  const info = fresh.prefill(text.slice(0, cut), { allLogits: true }); // the options of the run that follows
  assert.ok(info.tokens > 0 && info.tokens < whole.T);
  assert.equal(info.reusedTokens, 0, 'the other text shares no prefix');
  const stepped = fresh.run(text, { allLogits: true });
  assert.ok(
    stepped.reusedTokens >= info.tokens - 1,
    `reused ${stepped.reusedTokens} of ${info.tokens} prefilled tokens`,
  );
  assert.deepEqual(Array.from(stepped.attentionAll), Array.from(whole.attentionAll));
  assert.deepEqual(Array.from(stepped.logitsLast), Array.from(whole.logitsLast));
  assert.equal(stepped.loss, whole.loss);
  // a cache made without every position's logits serves a run that wants them (the missing
  // logits come from the kept final residual stream): the same numbers and loss
  fresh.run('Something else entirely.');
  fresh.prefill(text.slice(0, cut));
  const withLogits = fresh.run(text, { allLogits: true });
  assert.ok(
    withLogits.reusedTokens >= info.tokens - 1,
    `reused ${withLogits.reusedTokens} of ${info.tokens} prefilled tokens`,
  );
  assert.deepEqual(Array.from(withLogits.attentionAll), Array.from(whole.attentionAll));
  assert.equal(withLogits.loss, whole.loss);
  // other switched-off heads: the cache cannot be reused, a full run
  fresh.prefill(text.slice(0, cut), { ablate: [[0, 0]] });
  const full = fresh.run(text, { allLogits: true });
  assert.equal(full.reusedTokens, 0);
  assert.deepEqual(Array.from(full.attentionAll), Array.from(whole.attentionAll));
  assert.throws(() => fresh.run(text, { topK: -1 }), /topK must be a non-negative integer/);
  fresh.dispose();
});

test('where the engine has relaxed SIMD, the package loads its relaxed build, and it agrees with SIMD128', () => {
  // a child node that validates relaxed SIMD's standard opcode (as Chromium does by default)
  const script = `
    const { loadModel } = await import(${JSON.stringify(new URL('../../../dist/headscope.js', import.meta.url).href)});
    const m = await loadModel(new URL(${JSON.stringify(testModelUrl.href)}));
    const r = m.run(${JSON.stringify(SENTENCE)});
    process.stdout.write(JSON.stringify({ simd: m.info.simd, logits: Array.from(r.logitsLast), attention: Array.from(r.attentionAll) }));`;
  const out = JSON.parse(
    execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', script], {
      maxBuffer: 1 << 28,
    }),
  );
  assert.deepEqual(out.simd, { arch: 'sse4.1', floatLanes: 4, simd: true, relaxedMadd: true });
  const r = model.run(SENTENCE);
  // Fused multiply-adds round once where SIMD128 rounds twice: the same bounds as native (FMA)
  // against wasm above: logits 1e-4 relative + 1e-4 absolute, attention 1e-5 absolute.
  let logitDiff = 0;
  out.logits.forEach((x, i) => {
    assert.ok(Math.abs(x - r.logitsLast[i]) <= 1e-4 + 1e-4 * Math.abs(x), `logit ${i}: ${x} vs ${r.logitsLast[i]}`);
    logitDiff = Math.max(logitDiff, Math.abs(x - r.logitsLast[i]));
  });
  out.attention.forEach((x, i) =>
    assert.ok(Math.abs(x - r.attentionAll[i]) <= 1e-5, `attention ${i}: ${x} vs ${r.attentionAll[i]}`),
  );
  // the two builds are different code: identical logits would mean the relaxed one was not used
  assert.ok(logitDiff > 0, 'the relaxed build computes with fused multiply-adds');
});

// The model writes: generate() on the page thread and in the Worker (dist/worker-thread.js
// in a worker_threads thread, through the real protocol) against the native CLI's `generate --json`;
// onToken's results against fresh runs; stopping; runs between tokens; bad options; the written
// text's decoding; the wasm heap.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadModel, wasmHeapUsedBytes } from '../../../dist/headscope.js';
import { loadModelInWorker } from '../../../dist/headscope-worker.js';
import { decodeWithSpans, MAX_GENERATE_TOKENS } from '../../../dist/generation.js';
import { repo, testModelUrl, testModelDir } from './helpers.js';
import { nodeWorker } from './node-worker.js';

const cli = ['build/native-release/headscope', 'build/native-debug/headscope'].map((p) => repo + p).find(existsSync);

// The test model (the shipped default when built: BPE, context 128) and a byte-level fixture with a
// context of 32 tokens, so that generation runs past the context (cut as typing cuts) and writes
// bytes that are not valid UTF-8 on their own.
const TINY = new URL('../../fixtures/models/tiny-hs4/', import.meta.url);
// `stepwise`: the continuation whose every step is compared with a fresh run of its text. A fresh run
// tokenizes the text, which gives the same tokens only when the written bytes are valid UTF-8 and
// the tokenizer splits them as they were written; on the random byte-level fixture, this seed and
// temperature (found by trying seeds) write ASCII for all 40 tokens, 16 of them past the cut.
const models = [
  {
    name: 'test model',
    url: testModelUrl,
    dir: testModelDir,
    prompt: 'The chef, who trained in Paris, cooked',
    tokens: 30,
    stepwise: { prompt: 'The chef, who trained in Paris, cooked', settings: { temperature: 1, topK: 20, seed: 5 } },
  },
  {
    name: 'tiny-hs4',
    url: TINY,
    dir: fileURLToPath(TINY),
    prompt: 'The chef 😀',
    tokens: 40,
    stepwise: { prompt: 'The chef', settings: { temperature: 0.5, seed: 39 } },
  },
];
for (const m of models) {
  m.page = await loadModel(m.url);
  m.fresh = await loadModel(m.url); // fresh runs to compare with
  m.worker = await loadModelInWorker(m.url, { worker: nodeWorker() });
}
after(() => {
  for (const m of models) {
    m.page.dispose();
    m.fresh.dispose();
    m.worker.dispose();
  }
});

// greedy, top-k, top-p, a plain temperature, and all three together
const SETTINGS = [
  { temperature: 0 },
  { temperature: 1, topK: 5, seed: 1 },
  { temperature: 1, topP: 0.9, seed: 2 },
  { temperature: 0.7, seed: 7 },
  { temperature: 1.3, topK: 40, topP: 0.95, seed: 11 },
];

function cliGenerate(dir, text, tokens, { temperature = 1, topK = 0, topP = 1, seed = 0 }) {
  assert.ok(cli, 'native CLI not built (tests/js/run.sh builds it first)');
  const args = [
    'generate',
    '--model',
    dir,
    '--text',
    text,
    '--tokens',
    String(tokens),
    '--temperature',
    String(temperature),
    '--top-k',
    String(topK),
    '--top-p',
    String(topP),
    '--seed',
    String(seed),
    '--json',
  ];
  return JSON.parse(execFileSync(cli, args, { maxBuffer: 1 << 26 }));
}

// Every number a result holds, read through its accessors (results from a generation keep wider
// blocks than a fresh run's, so attentionAll is compared head by head)
function assertSameResult(actual, expected, what) {
  assert.equal(actual.T, expected.T, `${what}: T`);
  assert.deepEqual(actual.tokens, expected.tokens, `${what}: tokens`);
  assert.equal(actual.text, expected.text, `${what}: text`);
  assert.equal(actual.droppedTokens, expected.droppedTokens, `${what}: droppedTokens`);
  for (let l = 0; l < actual.nLayer; l++)
    for (let h = 0; h < actual.nHead; h++)
      assert.deepEqual(actual.attention(l, h), expected.attention(l, h), `${what}: attention L${l}H${h}`);
  assert.deepEqual(actual.contributionNorms, expected.contributionNorms, `${what}: contributionNorms`);
  assert.deepEqual(actual.logitsLast, expected.logitsLast, `${what}: logitsLast`);
  assert.deepEqual(actual.topNext, expected.topNext, `${what}: topNext`);
}

// The ids are compared exactly: both engines draw with the specified random source from their own
// logits, which differ in their last bits (native FMA vs wasm SIMD128), so a draw could only differ
// if it fell within ~1e-6 of a boundary between two tokens' cumulative probabilities.
for (const m of models) {
  test(`${m.name}: generate() on the page thread and in the Worker writes the CLI's ids`, async () => {
    for (const s of SETTINGS) {
      const want = cliGenerate(m.dir, m.prompt, m.tokens, s);
      const page = await m.page.generate(m.prompt, { maxTokens: m.tokens, ...s });
      const where = `${JSON.stringify(s)}`;
      assert.deepEqual(page.ids, want.ids, `page thread ${where}: ids`);
      assert.deepEqual(page.generatedIds, want.generated, `page thread ${where}: generated`);
      assert.equal(page.promptTokens, want.ids.length - want.generated.length);
      assert.equal(page.stopped, false);
      assert.deepEqual(
        page.tokens.map((t) => t.id),
        want.ids,
      );
      // the CLI replaces invalid UTF-8 its own way; a valid text must be the same
      if (!want.text.includes('\uFFFD') && !page.text.includes('\uFFFD'))
        assert.equal(page.text, want.text, `${where}: text`);
      assert.ok(page.text.startsWith(m.prompt));
      // the Worker: without onToken (no progress) and with it (a result per token, acknowledged)
      const worker = await m.worker.generate(m.prompt, { maxTokens: m.tokens, ...s });
      assert.deepEqual(worker, page, `worker ${where}`);
      let heard = 0;
      const withTokens = await m.worker.generate(m.prompt, {
        maxTokens: m.tokens,
        ...s,
        onToken: () => {
          heard++;
        },
      });
      assert.deepEqual(withTokens, page, `worker with onToken ${where}`);
      assert.equal(heard, m.tokens);
    }
  });

  test(`${m.name}: onToken hears each token with a result equal to a fresh run of the sequence so far, moving only the new rows`, async () => {
    const { prompt, settings: s } = m.stepwise;
    const want = cliGenerate(m.dir, prompt, m.tokens, s);
    // the result on screen, as a page's runner keeps it: blocks with room for typed (or written) tokens
    const start = m.page.run(prompt, { reuse: m.page.run('Another text.') });
    assert.ok(start.stride > start.T);
    const promptIds = start.tokens.map((t) => t.id);
    const heardPage = [];
    let compared = 0;
    let rowUpdates = 0;
    let wider = 0;
    let stride = start.stride;
    const value = await m.page.generate(prompt, {
      maxTokens: m.tokens,
      ...s,
      reuse: start,
      onToken: ({ index, id, token, prob, distribution, result }) => {
        assert.equal(index, heardPage.length);
        assert.equal(id, want.generated[index]);
        assert.equal(token, m.page.tokenText(id));
        // the distribution it was drawn from: most likely first, summing to 1, holding the token
        assert.ok(distribution.ids instanceof Int32Array && distribution.probs instanceof Float64Array);
        assert.ok(Math.abs(distribution.probs.reduce((a, b) => a + b, 0) - 1) < 1e-9);
        if (s.topK) assert.ok(distribution.ids.length <= s.topK, `top-k ${s.topK} keeps at most ${s.topK} tokens`);
        for (let k = 1; k < distribution.probs.length; k++)
          assert.ok(distribution.probs[k] <= distribution.probs[k - 1]);
        const at = distribution.ids.indexOf(id);
        assert.ok(at >= 0 && distribution.probs[at] === prob);
        assert.deepEqual(
          distribution.top.map((p) => p.id),
          Array.from(distribution.ids.subarray(0, 10)),
        );
        // the sequence so far, in the result's window (the last nPositions tokens, cut in steps)
        const sequence = want.ids.slice(0, promptIds.length + index + 1);
        assert.deepEqual(
          result.tokens.map((t) => t.id),
          sequence.slice(result.droppedTokens),
        );
        if (result.rowsFrom === result.T - 1) rowUpdates++;
        if (result.stride !== stride) wider++; // the blocks ran out of room: copied whole, wider
        stride = result.stride;
        // a fresh run of the text is the same run when the text tokenizes to these ids (a BPE
        // model may split its own output otherwise; a byte model cannot when the bytes are valid
        // UTF-8): bit for bit, as an incremental step equals a full run (tests/cpp/model/test_generate.cpp)
        if (
          m.fresh
            .tokenize(result.text)
            .map((t) => t.id)
            .join() === sequence.join()
        ) {
          assertSameResult(result, m.fresh.run(result.text), `token ${index}`);
          compared++;
        }
        heardPage.push({ result, id });
      },
    });
    assert.deepEqual(value.generatedIds, want.generated);
    assert.equal(heardPage.length, m.tokens);
    // only the latest result may be read: each took the previous one's attention buffer
    assert.throws(() => heardPage[0].result.attention(0, 0), /updated by a later run/);
    assert.throws(() => start.attention(0, 0), /updated by a later run/);
    assert.ok(compared >= m.tokens * 0.8, `only ${compared} of ${m.tokens} steps tokenize back to the same ids`);
    // each token an incremental step: one new row per head, except at a cut past the context or when
    // the blocks ran out of room (a full copy)
    const cuts = new Set(heardPage.map((h) => h.result.droppedTokens)).size - 1;
    assert.ok(
      rowUpdates >= m.tokens - cuts - wider,
      `${rowUpdates} row updates of ${m.tokens} tokens (${cuts} cuts, ${wider} wider blocks)`,
    );
    assert.ok(rowUpdates >= m.tokens / 2);
    if (m.name === 'tiny-hs4') assert.ok(cuts > 0, 'the fixture writes past its context');
    // the Worker's results, patched on the page from the rows sent, are the same numbers
    const page = [];
    const again = await m.page.generate(prompt, {
      maxTokens: m.tokens,
      ...s,
      onToken: ({ result }) => {
        page.push({
          tokens: result.tokens,
          attention: result.attention(result.nLayer - 1, result.nHead - 1),
          logits: result.logitsLast,
        });
      },
    });
    let i = 0;
    const workerStart = await m.worker.run(prompt, { reuse: await m.worker.run('Another text.') });
    let workerStride = workerStart.stride;
    const viaWorker = await m.worker.generate(prompt, {
      maxTokens: m.tokens,
      ...s,
      reuse: workerStart,
      onToken: async ({ result }) => {
        assert.deepEqual(result.tokens, page[i].tokens, `worker token ${i}: tokens`);
        assert.deepEqual(
          result.attention(result.nLayer - 1, result.nHead - 1),
          page[i].attention,
          `worker token ${i}: attention`,
        );
        assert.deepEqual(result.logitsLast, page[i].logits, `worker token ${i}: logits`);
        if (result.droppedTokens === (i ? heardPage[i - 1].result.droppedTokens : 0) && result.stride === workerStride)
          assert.equal(result.rowsFrom, result.T - 1, `worker token ${i}: one new row`);
        workerStride = result.stride;
        i++;
      },
    });
    assert.equal(i, m.tokens);
    assert.deepEqual(viaWorker, again);
  });
}

test('the written text is the decoded bytes, with spans covering split characters', async () => {
  // tiny-hs4 is byte-level: each id < 256 is one byte (GPT-2's byte-to-character map read backwards)
  const m = models[1];
  const vocab = JSON.parse(readFileSync(new URL('vocab.json', m.url), 'utf8'));
  const byteOf = new Map();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    byteOf.set(String.fromCodePoint(printable ? b : 256 + n++), b);
  }
  const idBytes = new Map(
    Object.entries(vocab)
      .filter(([k]) => [...k].length === 1 && byteOf.has(k))
      .map(([k, id]) => [id, byteOf.get(k)]),
  );
  let invalid = 0;
  for (let seed = 0; seed < 8; seed++) {
    const v = await m.page.generate(m.prompt, { maxTokens: 24, temperature: 1.5, seed });
    if (v.ids.some((id) => !idBytes.has(id))) continue; // the end-of-text token: not a byte
    const bytes = Uint8Array.from(v.ids, (id) => idBytes.get(id));
    const decoded = new TextDecoder().decode(bytes);
    assert.equal(v.text, decoded, `seed ${seed}`);
    if (decoded.includes('\uFFFD')) invalid++;
    // every token's span covers its bytes' characters, in order
    for (let i = 1; i < v.tokens.length; i++)
      assert.ok(v.tokens[i].start >= v.tokens[i - 1].start && v.tokens[i].end >= v.tokens[i].start);
    assert.equal(v.tokens.at(-1).end, v.text.length);
  }
  assert.ok(invalid > 0, 'random bytes at temperature 1.5 include some that are not UTF-8');
  // the decoder itself against TextDecoder, on random bytes biased towards UTF-8's lead bytes
  let x = 12345;
  const rand = () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 8) & 0xff;
  for (let k = 0; k < 2000; k++) {
    const bytes = Uint8Array.from({ length: 1 + (k % 13) }, () => {
      const r = rand();
      return r < 96 ? 0x80 + (r % 64) : r < 160 ? 0xc0 + (r % 64) : r;
    });
    const { text, start, end } = decodeWithSpans(bytes);
    assert.equal(text, new TextDecoder().decode(bytes), `bytes ${Array.from(bytes)}`);
    assert.equal(start(bytes.length), text.length);
    assert.equal(end(bytes.length), text.length);
    for (let b = 0; b < bytes.length; b++) assert.ok(start(b) < end(b + 1));
  }
});

test('signal: stopping before the next token resolves with the tokens onToken heard', async () => {
  const m = models[0];
  const s = { temperature: 1, seed: 3 };
  const full = await m.page.generate(m.prompt, { maxTokens: 20, ...s });
  for (const [where, model] of [
    ['page thread', m.page],
    ['worker', m.worker],
  ]) {
    // stopped from inside onToken: the token it heard is part of the value
    const stop = new AbortController();
    let heard = 0;
    const v = await model.generate(m.prompt, {
      maxTokens: 20,
      ...s,
      signal: stop.signal,
      onToken: ({ index }) => {
        heard++;
        if (index === 4) stop.abort();
      },
    });
    assert.equal(v.stopped, true, where);
    assert.equal(heard, 5, where);
    assert.deepEqual(v.generatedIds, full.generatedIds.slice(0, 5), where);
    assert.deepEqual(v.ids, full.ids.slice(0, v.promptTokens + 5), where);
    assert.equal(v.tokens.at(-1).end, v.text.length, `${where}: the text ends with the last token heard`);
    // stopped while onToken awaits something (a page painting): the same
    const stop2 = new AbortController();
    const v2 = await model.generate(m.prompt, {
      maxTokens: 20,
      ...s,
      signal: stop2.signal,
      onToken: async ({ index }) => {
        await new Promise((resolve) => setImmediate(resolve));
        if (index === 2) stop2.abort();
      },
    });
    assert.deepEqual(v2.generatedIds, full.generatedIds.slice(0, 3), `${where}: awaited onToken`);
    // aborted before it starts: nothing is written
    const v3 = await model.generate(m.prompt, { maxTokens: 20, ...s, signal: AbortSignal.abort() });
    assert.deepEqual(v3.generatedIds, [], where);
    assert.equal(v3.text, m.prompt, where);
    assert.equal(v3.stopped, true, where);
    // without onToken, from outside, while it writes (a generation far longer than the wait): the
    // value is a prefix of the same seed's continuation
    const stop4 = new AbortController();
    const writing = model.generate(m.prompt, { maxTokens: MAX_GENERATE_TOKENS, ...s, signal: stop4.signal });
    await model.tokenize('x'); // a round trip: the generation has started
    stop4.abort();
    const v4 = await writing;
    assert.equal(v4.stopped, true, where);
    assert.ok(v4.generatedIds.length < MAX_GENERATE_TOKENS, where);
    const n = Math.min(v4.generatedIds.length, full.generatedIds.length);
    assert.deepEqual(v4.generatedIds.slice(0, n), full.generatedIds.slice(0, n), where);
    // the model is usable afterwards, and its next run equals a fresh one
    assertSameResult(await model.run(m.prompt), m.fresh.run(m.prompt), `${where}: a run after stopping`);
  }
});

test('other runs between tokens do not change the continuation', async () => {
  const m = models[0];
  const s = { temperature: 1, topP: 0.95, seed: 9 };
  const want = cliGenerate(m.dir, m.prompt, 12, s);
  // on the page thread: a run of another text, the same text with a head off, an inspect run
  const page = await m.page.generate(m.prompt, {
    maxTokens: 12,
    ...s,
    onToken: ({ index, result }) => {
      if (index % 3 === 0) m.page.run('Something else entirely.');
      if (index % 3 === 1) m.page.run(result.text, { ablate: [[0, 0]] });
      if (index % 3 === 2) m.page.inspectHead(result.text, 0, 0);
    },
  });
  assert.deepEqual(page.ids, want.ids);
  // in the Worker: runs sent while onToken waits are answered between tokens, not after the end
  let answered = 0;
  const worker = await m.worker.generate(m.prompt, {
    maxTokens: 12,
    ...s,
    onToken: async ({ result }) => {
      const r = await m.worker.run('Something else entirely.');
      assert.equal(r.text, 'Something else entirely.');
      await m.worker.inspectHead(result.text, 0, 0);
      answered++;
    },
  });
  assert.equal(answered, 12);
  assert.deepEqual(worker.ids, want.ids);
  // switched-off heads: every step runs with them off, on both sides
  const off = await m.page.generate(m.prompt, {
    maxTokens: 8,
    temperature: 0,
    ablate: [
      [0, 0],
      [0, 1],
    ],
    onToken: ({ result }) => {
      assert.deepEqual(result.ablate, [
        [0, 0],
        [0, 1],
      ]);
      if (m.fresh.tokenize(result.text).length === result.T)
        assert.deepEqual(
          result.logitsLast,
          m.fresh.run(result.text, {
            ablate: [
              [0, 0],
              [0, 1],
            ],
          }).logitsLast,
        );
    },
  });
  assert.deepEqual(
    await m.worker.generate(m.prompt, {
      maxTokens: 8,
      temperature: 0,
      ablate: [
        [0, 0],
        [0, 1],
      ],
    }),
    off,
  );
});

test('bad options are Errors naming the option and its range, on both sides', async () => {
  const m = models[0];
  const cases = [
    [{ maxTokens: 0 }, /maxTokens must be a whole number within \[1, 100000\], got 0/],
    [{ maxTokens: 1.5 }, /maxTokens must be a whole number within \[1, 100000\], got 1.5/],
    [{ maxTokens: 100001 }, /maxTokens .*got 100001/],
    [{}, /maxTokens .*got undefined/],
    [{ maxTokens: 3, temperature: -1 }, /temperature must be a number within \[0, 10000\].*got -1/],
    [{ maxTokens: 3, temperature: NaN }, /temperature .*got NaN/],
    [{ maxTokens: 3, temperature: Infinity }, /temperature .*got Infinity/],
    [{ maxTokens: 3, temperature: '1' }, /temperature .*got string/],
    [{ maxTokens: 3, topK: -1 }, /topK must be a whole number >= 0 \(0: off\), got -1/],
    [{ maxTokens: 3, topK: 2.5 }, /topK .*got 2.5/],
    [{ maxTokens: 3, topP: 0 }, /topP must be a number within \(0, 1\] \(1: off\), got 0/],
    [{ maxTokens: 3, topP: 1.5 }, /topP .*got 1.5/],
    [{ maxTokens: 3, topP: NaN }, /topP .*got NaN/],
    [{ maxTokens: 3, seed: -1 }, /seed must be a whole number within \[0, 2\^53 - 1\], got -1/],
    [{ maxTokens: 3, seed: 0.5 }, /seed .*got 0.5/],
    [{ maxTokens: 3, ablate: [[9, 0]] }, /layer 9 is outside \[0, \d+\)/],
    [{ maxTokens: 3, ablate: [[0, 99]] }, /head 99 is outside \[0, \d+\)/],
  ];
  for (const [where, model] of [
    ['page thread', m.page],
    ['worker', m.worker],
  ]) {
    for (const [options, message] of cases) {
      await assert.rejects(
        model.generate(m.prompt, options),
        (e) => e instanceof Error && message.test(e.message),
        `${where} ${JSON.stringify(options)}`,
      );
    }
    await assert.rejects(model.generate('', { maxTokens: 3 }), /text is empty/, where);
    await assert.rejects(model.generate(null, { maxTokens: 3 }), /text must be a string, got null/, where);
    // an onToken that throws stops the generation with its error
    await assert.rejects(
      model.generate(m.prompt, {
        maxTokens: 5,
        onToken: () => {
          throw new Error('view failed');
        },
      }),
      /view failed/,
      where,
    );
    // whatever failed, the model still works
    assert.equal((await model.generate(m.prompt, { maxTokens: 2, temperature: 0 })).generatedIds.length, 2, where);
  }
});

test('generating leaves the wasm heap unchanged', async () => {
  const m = models[1];
  const rounds = async (n) => {
    for (let i = 0; i < n; i++) {
      const stop = new AbortController();
      await m.page.generate(m.prompt, {
        maxTokens: 12 + (i % 5) * 10,
        temperature: i % 4 === 0 ? 0 : 1,
        topK: i % 3,
        topP: i % 2 ? 0.9 : 1,
        seed: i,
        signal: stop.signal,
        onToken:
          i % 2
            ? ({ index }) => {
                if (index === 7 && i % 4 === 1) stop.abort();
              }
            : undefined,
      });
      if (i % 5 === 0) await assert.rejects(m.page.generate('', { maxTokens: 3 })); // errors must not leak either
      if (i % 7 === 0) await assert.rejects(m.page.generate(m.prompt, { maxTokens: 3, ablate: [[9, 9]] }));
      if (i % 3 === 0) m.page.run(m.prompt);
    }
  };
  await rounds(30); // warm-up: caches and buffers reach their size
  const before = await wasmHeapUsedBytes();
  await rounds(300);
  const after = await wasmHeapUsedBytes();
  // a leak of one 16-byte block per generation (or per token: ~10,000 tokens here) would add 4.8 KB
  // (or 160 KB); allow 4 KB of allocator noise, as the run count is lower than heap.test.js's
  assert.ok(after - before <= 4096, `wasm heap grew from ${before} to ${after} bytes over 300 generations`);
});

test("valueNorms: each written token's result holds every head's value sizes, equal to a fresh run's", async () => {
  const m = models[0];
  const prompt = 'The chef, who trained in Paris,';
  let heard = 0,
    compared = 0;
  for (const model of [m.page, m.worker]) {
    await model.generate(prompt, {
      maxTokens: 3,
      temperature: 0,
      valueNorms: true,
      onToken: ({ result }) => {
        heard++;
        assert.ok(result.valueNorms instanceof Float32Array);
        assert.equal(result.valueNorms.length, result.nLayer * result.nHead * result.T);
        // the same run when the written text tokenizes to the written ids (see the onToken test above)
        const fresh = m.fresh.run(result.text, { valueNorms: true });
        if (
          fresh.tokens.length === result.tokens.length &&
          fresh.tokens.every((t, i) => t.id === result.tokens[i].id)
        ) {
          assert.deepEqual(result.valueNorms, fresh.valueNorms);
          compared++;
        }
      },
    });
  }
  assert.equal(heard, 6);
  assert.ok(compared >= 2, `compared ${compared} of 6 with a fresh run`);
});

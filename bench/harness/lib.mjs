// Shared helpers of the benchmark harness: timing, statistics, loading the subjects.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { startStaticServer } from '../../web/server/static-server.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const now = () => performance.now();

// The CPU a result was measured on, for every bench result: the ceilings differ by vendor (AMD's
// separate multiply and add pipes give SIMD128 twice Intel's rate) and by vector extension (FMA,
// AVX-512; AVX-VNNI or AVX-512 VNNI for 8-bit dot products). From /proc/cpuinfo where there is one.
export function machineInfo() {
  const info = { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, loadavg: os.loadavg() };
  let text = '';
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return info;
  }
  const field = (name) => text.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm'))?.[1]?.trim();
  const flags = new Set((field('flags') ?? '').split(/\s+/));
  info.vendor = field('vendor_id');
  info.family = Number(field('cpu family'));
  info.model = Number(field('model'));
  info.flags = Object.fromEntries(
    ['fma', 'avx2', 'avx512f', 'avx_vnni', 'avx512_vnni', 'avx512_bf16'].map((f) => [f, flags.has(f)]),
  );
  return info;
}

// One line for a table's header: "AMD EPYC (AuthenticAMD family 25 model 17; FMA, AVX2, AVX-512, AVX-512 VNNI, no AVX-VNNI)"
export function machineLine(m) {
  if (!m?.flags) return `${m?.cpu ?? 'CPU not recorded'} (vendor and flags not recorded)`;
  const names = { fma: 'FMA', avx2: 'AVX2', avx512f: 'AVX-512', avx_vnni: 'AVX-VNNI', avx512_vnni: 'AVX-512 VNNI' };
  const has = Object.keys(names)
    .filter((f) => m.flags[f])
    .map((f) => names[f]);
  const hasnt = Object.keys(names)
    .filter((f) => !m.flags[f])
    .map((f) => `no ${names[f]}`);
  return `${m.cpu} (${m.vendor} family ${m.family} model ${m.model}; ${[...has, ...hasnt].join(', ')})`;
}

// A bench's command line (node:util parseArgs, strict): `required` and `strings` are string options
// (the required ones must be given, else `usage: ${usage}` is thrown), `defaults` string options with
// their default, `flags` booleans that default to false. Returns the values.
export function benchArgs({ required = [], strings = [], defaults = {}, flags = [] }, usage = '') {
  const options = {};
  for (const name of [...required, ...strings]) options[name] = { type: 'string' };
  for (const [name, value] of Object.entries(defaults)) options[name] = { type: 'string', default: value };
  for (const name of flags) options[name] = { type: 'boolean', default: false };
  const { values } = parseArgs({ options });
  if (required.some((name) => !values[name])) throw new Error(`usage: ${usage}`);
  return values;
}

export function stats(samples) {
  const v = [...samples].sort((a, b) => a - b);
  const q = (p) => v[Math.min(v.length - 1, Math.floor(p * v.length))];
  return { median_ms: q(0.5), p95_ms: q(0.95), min_ms: v[0], runs: v.length };
}

// Times several subjects of the same case side by side: warm-up calls for each (so V8 has tiered
// the wasm up to TurboFan), then `rounds` rounds in which every subject runs in turn for about
// minMs/rounds, so a load spike on the shared machine hits all subjects alike.
// subjects: { name: { fn, before? } }; fn may be async. Returns { name: stats }.
export async function compare(subjects, { warm = 8, minRuns = 15, minMs = 250, rounds = 20, maxRuns = 3000 } = {}) {
  const names = Object.keys(subjects);
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (const n of names) {
    const { fn, before } = subjects[n];
    for (let i = 0; i < warm; i++) {
      if (before) await before();
      await fn();
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const n of names) {
      const { fn, before } = subjects[n];
      const s = samples[n];
      let spent = 0,
        runs = 0;
      while ((runs < Math.ceil(minRuns / rounds) || spent < minMs / rounds) && s.length < maxRuns) {
        if (before) await before();
        const t0 = now();
        const p = fn();
        if (p && typeof p.then === 'function') await p;
        const dt = now() - t0;
        s.push(dt);
        spent += dt;
        runs++;
      }
    }
  }
  return Object.fromEntries(names.map((n) => [n, stats(samples[n])]));
}

// The benchmark embind module of one build tree (createHeadscopeBench), given the .wasm bytes.
export async function loadBenchModule(dir, name = 'headscope_bench_wasm') {
  const js = path.join(dir, `${name}.js`);
  if (!existsSync(js)) throw new Error(`${js} not found: run scripts/bench.sh (it builds the benchmark modules)`);
  const { default: factory } = await import(pathToFileURL(path.resolve(js)).href);
  return factory({ wasmBinary: readFileSync(path.join(dir, `${name}.wasm`)) });
}

export function readModelFiles(dir) {
  return {
    config: readFileSync(path.join(dir, 'config.json'), 'utf8'),
    weights: new Uint8Array(readFileSync(path.join(dir, 'model.safetensors'))),
    vocab: readFileSync(path.join(dir, 'vocab.json'), 'utf8'),
    merges: readFileSync(path.join(dir, 'merges.txt'), 'utf8'),
  };
}

export function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// Deterministic token ids, the same for every subject.
export function benchIds(n, vocab) {
  return Array.from({ length: n }, (_, i) => (i * 7919 + 13) % vocab);
}

// The markdown report of a GPT-2-small-shaped bench (wasm-gpt2-small.mjs, browser-gpt2-small.mjs):
// its title, who wrote it and when, the checkpoint's shape ({ nLayer, nHead, nEmbd, nPositions,
// vocabSize }), then `lines`.
export function gpt2SmallMarkdown(title, command, shape, lines) {
  return (
    `# ${title}\n\nWritten by \`${command}\` on ` +
    new Date().toISOString().slice(0, 16).replace('T', ' ') +
    ` UTC, on the checkpoint of bench/shapes/make_gpt2_small.py (${shape.nLayer} layers, ${shape.nHead} heads, d_model ${shape.nEmbd}, ` +
    `context ${shape.nPositions}, vocabulary ${shape.vocabSize}); ONNX graph from bench/shapes/export_onnx.py. ` +
    `CPU: ${machineLine(machineInfo())}.\n\n` +
    lines.join('\n') +
    '\n'
  );
}

// The engine's Model.run(text, ablate, allLogits, patch): builds before run({ patch }) take 3 arguments
export function coreRunCall(h, text) {
  try {
    return h.run(text, [], false, null);
  } catch (e) {
    if (/expected 3 args/.test(String(e?.message))) return h.run(text, [], false);
    throw e;
  }
}

/** Runs `cli args...` as a whole process, timed from outside: { ms, stdout }; throws with its stderr on failure. */
export function timedCommand(cli, args) {
  const t0 = performance.now();
  const r = spawnSync(cli, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cli} ${args[0]} failed (${r.status}): ${r.stderr}`);
  return { ms, stdout: r.stdout };
}

/**
 * A new page of `browser` at `url` (a bench page whose script sets window.__bench: browser_page/,
 * llama_prefill_page/), page errors logged and kept, console errors and warnings logged; refused if
 * the page is not cross-origin isolated (no threads to measure). Returns { page, pageErrors, env:
 * { isolated, cores }, call(name, op, args) }: call() is window.__bench.call, a request to one subject.
 */
export async function openBenchPage(browser, url, log) {
  const pageErrors = [];
  const page = await browser.newPage();
  page.on('pageerror', (e) => {
    log('page error:', e.message);
    pageErrors.push(e.message);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') log(`console ${m.type()}: ${m.text()}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => window.__bench, null, { timeout: 30_000 });
  const env = await page.evaluate(() => ({ isolated: window.__bench.isolated, cores: window.__bench.cores }));
  if (!env.isolated) throw new Error('the bench page is not cross-origin isolated: no threads to measure');
  const call = (name, op, args) => page.evaluate(([a, b, c]) => window.__bench.call(a, b, c), [name, op, args]);
  return { page, pageErrors, env, call };
}

/**
 * The static server of a bench page: bench/harness/PAGE_DIR at the root, the pages' shared code
 * (page_common/) at /common/, and `mounts` and the other options of startStaticServer.
 */
export function startBenchPageServer(pageDir, { mounts = [], ...options } = {}) {
  return startStaticServer({
    root: path.join(ROOT, 'bench', 'harness', pageDir),
    mounts: [['/common/', path.join(ROOT, 'bench', 'harness', 'page_common')], ...mounts],
    ...options,
  });
}

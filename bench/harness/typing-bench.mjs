// Typing in the demo as a reader types, the two figures a regression in the page shows first
// (headless Chromium, the demo served as scripts/run.sh serves it: strict CSP, cross-origin
// isolated, so the engine runs on its threads):
//   1. the default model, typing at the end of the article's sentence, one character every 120 ms:
//      keystroke to the frame that shows its run (p50, p95), over PASSES fresh pages;
//   2. a GPT-2-shaped folder (--gpt2 DIR, bench/shapes/make_gpt2_small.py) at about --tokens tokens, one
//      word (one new token) every --gap ms: the typed token's time from its input event to the frame
//      that shows its run, and how many keystrokes showed a run of their own.
// Keystrokes come at a fixed rhythm, not after the previous result, so a page that falls behind shows
// it: a keystroke whose text never reaches the screen (a later one's did) counts as not shown.
// The probe is demo-probe.mjs's (its window.__typing): it reads only what every version of the demo
// publishes, so it times an old commit's site as well as today's.
// Usage: node bench/harness/typing-bench.mjs --demo SITE --out FILE [--gpt2 DIR] [--quick] [--tokens 950] [--gap 600]
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { benchArgs, machineInfo, stats } from './lib.mjs';
import { DEMO_PROBE, labRolesMeasured, startTyping } from './demo-probe.mjs';
import { startStaticServer, DEMO_CSP, ISOLATION_HEADERS } from '../../web/server/static-server.mjs';

const opt = benchArgs(
  {
    required: ['demo', 'out'],
    strings: ['gpt2', 'passes'],
    defaults: { tokens: '950', gap: '600' },
    flags: ['quick', 'default-only'],
  },
  'node bench/harness/typing-bench.mjs --demo SITE --out FILE [--gpt2 DIR] [--quick]',
);
const log = (...a) => console.error('[typing]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Each input matched with the first paint of its own text after it; null when none came.
function match({ inputs, shown }) {
  return inputs.map((k) => {
    const s = shown.find((x) => x.text === k.text && x.t >= k.t);
    return s ? s.t - k.t : null;
  });
}

const server = await startStaticServer({
  root: path.resolve(opt.demo),
  mounts: opt.gpt2 ? [['/model/', path.resolve(opt.gpt2)]] : [],
  csp: DEMO_CSP,
  headers: ISOLATION_HEADERS,
});
const browser = await launchChromium();
const pageErrors = [];
async function openDemo(query) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(DEMO_PROBE);
  page.on('pageerror', (e) => {
    log('page error:', e.message);
    pageErrors.push(e.message);
  });
  await page.goto(`${server.url}index.html?${query}`);
  await page.waitForFunction(() => window.headscopeDemo?.result, null, { timeout: 300_000 });
  return { context, page };
}
// until the page has nothing to run (the runner idle) and two frames have passed
const settle = (page) =>
  page.evaluate(async () => {
    await window.headscopeDemo.idle();
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  });

const out = { chromium: browser.version(), machine: machineInfo(), site: path.resolve(opt.demo) };

// ---- 1. the default model, a character every 120 ms at the end of a short text --------------------
{
  const SENTENCE = 'The chef, who trained in Paris, cooked the meal quickly.';
  const TYPED = ' Then the guests ate it in the garden and talked about the rain.';
  const passes = Number(opt.passes ?? (opt.quick ? 1 : 3));
  const chars = opt.quick ? TYPED.slice(0, 30) : TYPED;
  const all = [];
  for (let p = 0; p < passes; p++) {
    const { context, page } = await openDemo(`text=${encodeURIComponent(SENTENCE)}`);
    await settle(page);
    await startTyping(page);
    for (const ch of chars) {
      await page.keyboard.type(ch);
      await sleep(120);
    }
    await settle(page);
    const m = match(await page.evaluate(() => window.__typing));
    all.push(...m);
    await context.close();
  }
  const shown = all.filter((x) => x !== null);
  out.default_model = {
    text: SENTENCE,
    typed_per_pass: chars.length,
    passes,
    gap_ms: 120,
    keystrokes: all.length,
    shown: shown.length,
    shown_fraction: shown.length / Math.max(1, all.length),
    keystroke_to_frame: stats(shown),
  };
  const d = out.default_model;
  log(
    `default model: keystroke to frame p50 ${d.keystroke_to_frame.median_ms.toFixed(1)} ms, p95 ${d.keystroke_to_frame.p95_ms.toFixed(1)} ms; ${d.shown} of ${d.keystrokes} keystrokes shown`,
  );
}

// ---- 2. a GPT-2-shaped folder at about TOKENS tokens, a word every GAP ms ------------------------
if (opt.gpt2 && !opt['default-only']) {
  const TOKENS = Number(opt.tokens),
    GAP = Number(opt.gap),
    KEYS = opt.quick ? 5 : 12;
  const { context, page } = await openDemo(`model=${encodeURIComponent('/model/')}&text=Short.`);
  const info = await page.evaluate(() => ({
    ...window.headscopeDemo.model.info.config,
    threads: window.headscopeDemo.model.info.threads,
  }));
  const PROSE =
    'the chef who trained in paris cooked the meal quickly while the guests waited in the garden and talked about the long summer';
  const text = await page.evaluate(
    async ({ prose, n }) => {
      const words = prose.split(' ');
      const long = Array.from({ length: Math.ceil(n / 1.1) + 50 }, (_, i) => words[i % words.length]).join(' ');
      const tokens = await window.headscopeDemo.model.tokenize(long);
      return long.slice(0, tokens[n].start);
    },
    { prose: PROSE, n: TOKENS },
  );
  // The lab measures the model's roles once, on probe texts of its own, at the reader's first pause;
  // those runs take the engine's cache (as at a7433ea, where this figure was first taken), so the
  // typing is timed after them
  await labRolesMeasured(page, 600_000);
  const t0 = Date.now();
  await page.fill('#text', text);
  await page.waitForFunction((t) => window.headscopeDemo.result?.text === t, text, { timeout: 900_000 });
  const firstRunMs = Date.now() - t0;
  // the page's follow-up work on a new text (the panels' requests) is part of what a reader meets:
  // the typing starts a moment after the first result, as a reader's would
  await settle(page);
  await sleep(1000);
  await settle(page);
  await startTyping(page);
  const words = ' and then the guests ate it in the garden before the rain came down'.split(/(?= )/);
  for (let k = 0; k < KEYS; k++) {
    await page.keyboard.insertText(words[k % words.length]); // one input event: one new token
    await sleep(GAP);
  }
  await settle(page);
  const m = match(await page.evaluate(() => window.__typing));
  await context.close();
  const shown = m.filter((x) => x !== null);
  out.gpt2_small = {
    model: {
      n_layer: info.nLayer,
      n_head: info.nHead,
      n_embd: info.nEmbd,
      n_positions: info.nPositions,
      threads: info.threads,
    },
    tokens: TOKENS,
    gap_ms: GAP,
    first_run_ms: firstRunMs,
    keystrokes: m.length,
    shown: shown.length,
    shown_fraction: shown.length / Math.max(1, m.length),
    typed_token: shown.length ? stats(shown) : null,
    per_key_ms: m.map((x) => (x === null ? null : Math.round(x))),
  };
  const g = out.gpt2_small;
  log(
    `GPT-2 (${info.nLayer} x ${info.nHead}, width ${info.nEmbd}, ${info.threads} threads) at ${TOKENS} tokens: first run ${(firstRunMs / 1000).toFixed(1)} s; ` +
      `typed token median ${g.typed_token?.median_ms.toFixed(0)} ms, p95 ${g.typed_token?.p95_ms.toFixed(0)} ms; ${g.shown} of ${g.keystrokes} keystrokes shown (${g.per_key_ms.join(', ')})`,
  );
}

await browser.close();
await server.close();
await writeFile(opt.out, JSON.stringify(out, null, 1));
log('wrote', opt.out);
if (pageErrors.length) throw new Error(`uncaught exceptions on the demo page:\n${pageErrors.join('\n')}`);

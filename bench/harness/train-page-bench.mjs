// Start to the first induction head on the training page, in headless Chromium:
// opens the demo site's train.html (built by web/demo/build.sh), clicks only run A's Start (the page's
// default preset, `induction`) and waits until the panel reports its first head with an induction
// score of at least 0.4 (web/demo/train-run.js sets data-induction-at-ms, the training time since
// Start, and data-induction-at-step). Reports that time, the wall time from the click to the
// attribute appearing, the step, and the tokens/s the page trained at. Target: under 60 s.
// Usage: node bench/harness/train-page-bench.mjs --site DIR --out FILE [--repeats N] [--timeout-s S]
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { launchChromium } from '../../scripts/common/chromium.mjs';
import { startStaticServer, DEMO_CSP } from '../../web/server/static-server.mjs';
import { benchArgs, machineInfo } from './lib.mjs';

const opt = benchArgs(
  { required: ['site', 'out'], defaults: { repeats: '1', 'timeout-s': '180' } },
  'node bench/harness/train-page-bench.mjs --site DIR --out FILE [--repeats N] [--timeout-s S]',
);
const log = (...a) => console.error('[train-page]', ...a);
const TARGET_MS = 60_000;

const server = await startStaticServer({ root: path.resolve(opt.site), csp: DEMO_CSP });
const browser = await launchChromium();
const chromiumVersion = browser.version();
const runs = [];
try {
  for (let i = 0; i < Number(opt.repeats); i++) {
    const context = await browser.newContext(); // fresh: nothing cached, no trained model in IndexedDB
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}train.html`);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60_000 });
    const runA = page.locator('[data-run="A"]');
    const preset = await runA.locator('select').first().inputValue();
    const loadBefore = os.loadavg()[0];
    const t0 = Date.now();
    await runA.locator('.train-start').click();
    let timedOut = false;
    try {
      await page.waitForSelector('[data-run="A"][data-induction-at-ms]', {
        timeout: Number(opt['timeout-s']) * 1000,
        polling: 50,
      });
    } catch {
      timedOut = true;
    }
    const wall = Date.now() - t0;
    const at = await runA.evaluate((el) => ({
      ms: el.dataset.inductionAtMs,
      step: el.dataset.inductionAtStep,
      steps: el.dataset.steps,
    }));
    const status = await runA
      .locator('.train-status')
      .first()
      .textContent()
      .catch(() => null);
    const run = {
      preset,
      induction_at_ms: at.ms === undefined ? null : Number(at.ms),
      induction_at_step: at.step === undefined ? null : Number(at.step),
      wall_ms_from_click: wall,
      timed_out: timedOut,
      steps_when_read: at.steps === undefined ? null : Number(at.steps),
      status,
      loadavg_1min_at_start: loadBefore,
      errors,
    };
    // the page's own readout of its training speed (the Worker's tokens/s, probes excluded)
    const shown = /([\d,]+) tokens\/s/.exec(status ?? '');
    run.page_status_tokens_per_s = shown ? Number(shown[1].replace(/,/g, '')) : null;
    // tokens/s the page trained at until then, probes included (the preset's batch 16 x T 32 per step)
    if (run.induction_at_ms && run.induction_at_step)
      run.tokens_per_s = (run.induction_at_step * 16 * 32) / (run.induction_at_ms / 1000);
    log(
      timedOut
        ? `no induction head within ${opt['timeout-s']} s (${at.steps} steps)`
        : `run ${i + 1}: induction head at step ${run.induction_at_step}, ${(run.induction_at_ms / 1000).toFixed(1)} s of training, ${(wall / 1000).toFixed(1)} s from the click`,
    );
    runs.push(run);
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
}
const done = runs.filter((r) => r.induction_at_ms !== null);
const med = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length ? v[(v.length - 1) >> 1] : null;
};
const result = {
  chromium: chromiumVersion,
  machine: machineInfo(), // the CPU: the ceilings differ by vendor and flags
  target_ms: TARGET_MS,
  runs,
  induction_at_ms: med(done.map((r) => r.induction_at_ms)),
  wall_ms_from_click: med(done.map((r) => r.wall_ms_from_click)),
  induction_at_step: med(done.map((r) => r.induction_at_step)),
  page_status_tokens_per_s: med(runs.map((r) => r.page_status_tokens_per_s).filter((x) => x)),
  all_found: done.length === runs.length,
};
await writeFile(opt.out, JSON.stringify(result, null, 1) + '\n');
log(`wrote ${opt.out}`);

// As a consumer would use the package: pack the tarball, install it into a scratch project, use it
// from Node, bundle a page with Vite, and run that page in headless Chromium on the main thread
// and in the Worker wrapper, under a strict Content-Security-Policy.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium } from '../../../scripts/common/chromium.mjs';
import { repo, testModelDir } from './helpers.js';
import { startStaticServer } from '../../../web/server/static-server.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'headscope-consumer-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const tarball = join(
  scratch,
  execFileSync('npm', ['pack', '--silent', '--pack-destination', scratch], { cwd: repo })
    .toString()
    .trim()
    .split('\n')
    .pop(),
);
const project = join(scratch, 'app');
mkdirSync(project);
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: project, stdio: 'pipe' });

test('the tarball holds the wasm, the JS, the types and the default model', () => {
  const bytes = statSync(tarball).size;
  console.log(`# npm pack: ${tarball.split('/').pop()} ${(bytes / 1024).toFixed(0)} KiB`);
  const files = execFileSync('tar', ['-tzf', tarball]).toString().split('\n');
  for (const f of [
    'package/dist/headscope.js',
    'package/dist/headscope.d.ts',
    'package/dist/headscope-worker.d.ts',
    'package/dist/analysis.d.ts',
    'package/dist/headscope-view.d.ts',
    'package/dist/headscope-lab.d.ts',
    'package/dist/headscope_wasm.wasm',
    'package/dist/headscope_wasm.js',
    'package/dist/headscope_wasm_relaxed.js',
    'package/dist/wasm.js',
    'package/dist/headscope_wasm_threads.js',
    'package/dist/headscope_wasm_threads.worker.js',
    'package/dist/headscope_wasm_threads.wasm',
    'package/dist/headscope_wasm_threads_relaxed.js',
    'package/dist/headscope_wasm_threads_relaxed.worker.js',
    'package/dist/headscope_wasm_threads_relaxed.wasm',
    'package/dist/files.js',
    'package/dist/result.js',
    'package/dist/generation.js',
    'package/dist/headscope-worker.js',
    'package/dist/worker-thread.js',
    'package/dist/worker-protocol.js',
    'package/dist/worker-fallback.js',
    'package/README.md',
    'package/LICENSE',
    'package/CHANGELOG.md',
  ])
    assert.ok(files.includes(f), `${f} missing from the tarball`);
  assert.ok(
    !files.some((f) => f.includes('/cpp/') || f.includes('node_modules')),
    'sources or node_modules leaked into the tarball',
  );
});

test('installed package works from Node', () => {
  const script = `
    import { loadModel } from 'headscope';
    const m = await loadModel(new URL(${JSON.stringify('file://' + testModelDir)}));
    const r = m.run('The chef, who trained in Paris, cooked the meal quickly.');
    console.log(JSON.stringify({ T: r.T, n: r.attentionAll.length, top: r.topNext[0].token, simd: m.info.simd.simd }));
    m.dispose();`;
  writeFileSync(join(project, 'use.mjs'), script);
  const out = JSON.parse(execFileSync('node', ['use.mjs'], { cwd: project }).toString());
  assert.ok(out.T > 5);
  assert.ok(out.simd);
});

// The component modules register their custom elements when imported: a bundler that believed the
// package's `sideEffects` were none would drop `import 'headscope/component'` and no element would
// exist. esbuild honours the field (as webpack and Rollup do), so its bundle must keep both defines.
test('a bundler keeps the self-registering components (package.json sideEffects)', async () => {
  const { build } = await import('esbuild');
  writeFileSync(join(project, 'components.js'), "import 'headscope/component';\nimport 'headscope/lab-component';\n");
  const result = await build({
    entryPoints: [join(project, 'components.js')],
    absWorkingDir: project,
    bundle: true,
    write: false,
    format: 'esm',
    logLevel: 'silent',
    external: ['*.wasm'],
  });
  const code = result.outputFiles[0].text;
  for (const name of ['headscope-view', 'headscope-lab'])
    assert.match(
      code,
      new RegExp(`customElements\\.define\\(\\s*["']${name}["']`),
      `the bundle dropped ${name}'s registration`,
    );
});

test('a Vite build bundles the .wasm and runs on the main thread and in a Worker under a strict CSP', async () => {
  mkdirSync(join(project, 'public'), { recursive: true });
  cpSync(testModelDir, join(project, 'public', 'model'), { recursive: true });
  writeFileSync(
    join(project, 'index.html'),
    '<!doctype html><meta charset="utf-8"><title>consumer</title><pre id="out">loading</pre><script type="module" src="/main.js"></script>',
  );
  writeFileSync(
    join(project, 'main.js'),
    `
    import { loadModel } from 'headscope';
    import { loadModelInWorker } from 'headscope/worker';
    const out = document.getElementById('out');
    try {
      const modelUrl = new URL('./model/', location.href);
      const main = await loadModel(modelUrl);
      const a = main.run('The chef, who trained in Paris');
      const worker = await loadModelInWorker(modelUrl);
      const b = await worker.run('The chef, who trained in Paris');
      let maxDiff = 0;
      for (let i = 0; i < a.attentionAll.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.attentionAll[i] - b.attentionAll[i]));
      let workerError = '';
      try { await worker.run(''); } catch (e) { workerError = e.message; }
      out.textContent = JSON.stringify({ T: a.T, workerT: b.T, maxDiff, workerError, attn: b.attention(0, 0).length });
      worker.dispose();
      main.dispose();
    } catch (e) {
      out.textContent = 'ERROR ' + e.message;
    }`,
  );
  execFileSync('node', [join(repo, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: project,
    stdio: 'pipe',
  });
  const assets = readdirSync(join(project, 'dist', 'assets'));
  assert.ok(
    assets.some((f) => f.endsWith('.wasm')),
    `no .wasm among the bundle's assets: ${assets.join(', ')}`,
  );

  const server = await startStaticServer({
    root: join(project, 'dist'),
    csp: "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'",
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const problems = [];
    // the browser's own favicon request is not the page's doing
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(m.text());
    });
    page.on('response', (res) => {
      if (res.status() >= 400 && !res.url().endsWith('/favicon.ico')) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(server.url);
    await page.waitForFunction(() => document.getElementById('out').textContent !== 'loading', null, {
      timeout: 60000,
    });
    const text = await page.textContent('#out');
    assert.ok(!text.startsWith('ERROR'), text);
    const r = JSON.parse(text);
    assert.ok(r.T > 5);
    assert.equal(r.workerT, r.T);
    assert.equal(r.maxDiff, 0); // the same wasm on the same input: identical
    assert.match(r.workerError, /text is empty/); // the engine's message crossed the worker boundary
    assert.equal(r.attn, r.T * r.T);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await server.close();
  }
});

// bench/harness/regressions.mjs: the figures of a results.json, each against the last committed full run's,
// and bench/harness/report.mjs's pass or fail on them. No timing: the figures are the committed
// bench/results/results.json's, or synthetic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  figures,
  compareFigures,
  explainedRegressions,
  renderComparison,
} from '../../../bench/harness/regressions.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const committed = JSON.parse(readFileSync(path.join(ROOT, 'bench/results/results.json'), 'utf8'));
const byId = (fs) => new Map(fs.map((f) => [f.id, f]));

test('figures() of the committed bench/results/results.json: unique ids, set directions, no calibration', () => {
  const fs = figures(committed);
  const ids = fs.map((f) => f.id);
  assert.equal(new Set(ids).size, ids.length, 'ids are unique');
  for (const f of fs) {
    assert.match(f.id, /^[a-z_]+\.[A-Za-z0-9_.-]+$/, f.id);
    assert.equal(typeof f.lower_is_better, 'boolean', f.id);
    assert.ok(f.label && f.unit, f.id);
  }
  const m = byId(fs);
  // [id, lower_is_better]
  const expected = [
    ['target.wasm-simd-3x-wasm-scalar-full-forward', false],
    ['target.keystroke-to-paint-p95-16-ms-for-t-64-web-demo', true],
    ['ratio.simd_over_scalar', false],
    ['ratio.wasm_over_native', false],
    ['detail.ours_gemm_gflops_geomean', false],
    ['detail.all_logits_run_over_ort', false],
    ['detail.engine_over_tile4x8_gemm', false],
    ['forward.simd.T16.median_ms', true],
    ['forward.simd.T128.median_ms', true],
    ['incremental.simd.T64.median_ms', true],
    ['package_api.model_load_ms', true],
    ['package_run_parts.api_run.median_ms', true],
    ['demo.keystroke_to_paint_T_le_64.median_ms', true],
    ['demo.keystroke_to_paint_T_le_64.p95_ms', true],
    ['page.main.keystroke_to_paint_T_le_64.p95_ms', true],
    ['page.worker.work_T_le_64.median_ms', true],
    ['training.default.wasm.tokens_per_s', false],
    ['training.d256.native.tokens_per_s', false],
  ];
  for (const [id, lower] of expected) {
    assert.ok(m.has(id), `${id} is a figure`);
    assert.equal(m.get(id).lower_is_better, lower, `${id}: lower is better = ${lower}`);
  }
  assert.equal(m.get('forward.simd.T16.median_ms').value, committed.forward.find((x) => x.T === 16).simd.median_ms);
  // calibration of the machine, V8's tiering cross-check and the peer's own rates are not ours
  for (const id of [
    'detail.no_liftoff_over_default_forward',
    'detail.no_liftoff_over_default_gemm',
    'detail.simd128_throughput_probe_gflops_best',
    'detail.tile4x8_gemm_gflops_best_max',
    'detail.ort_gemm_gflops_geomean',
    'training.default.torch.tokens_per_s',
  ])
    assert.ok(!m.has(id), `${id} is left out`);
  // ids come from keys, not values: a run with other numbers has the same ids in the same order
  const other = JSON.parse(JSON.stringify(committed), (k, v) => (typeof v === 'number' && k !== 'T' ? v * 1.7 : v));
  assert.deepEqual(
    figures(other).map((f) => f.id),
    ids,
  );
  // the typing figures exactly when the file has a typing section (full runs since 2026-12-03)
  const typingIds = ids.filter((id) => id.startsWith('typing.'));
  if (committed.typing) {
    assert.equal(
      m.get('typing.default_model.keystroke_to_frame.p95_ms')?.value,
      committed.typing.default_model.keystroke_to_frame.p95_ms,
    );
    assert.equal(
      m.get('typing.gpt2_small.typed_token.median_ms')?.value,
      committed.typing.gpt2_small.typed_token.median_ms,
    );
  } else {
    assert.deepEqual(typingIds, []);
  }
  const { typing, ...withoutTyping } = committed;
  assert.ok(!figures(withoutTyping).some((f) => f.id.startsWith('typing.')), 'no typing section: no typing figures');
});

test('figures() reads results.typing: keystroke to frame and typed token lower, shown fractions higher', () => {
  const typing = {
    chromium: '156',
    default_model: {
      keystrokes: 40,
      shown: 30,
      shown_fraction: 0.75,
      keystroke_to_frame: { median_ms: 20, p95_ms: 31, min_ms: 9, runs: 30 },
    },
    gpt2_small: {
      model: { n_layer: 12 },
      tokens: 950,
      keystrokes: 12,
      shown: 6,
      shown_fraction: 0.5,
      typed_token: { median_ms: 140, p95_ms: 210, min_ms: 99, runs: 6 },
    },
  };
  const m = byId(figures({ ...committed, typing }));
  const expected = [
    ['typing.default_model.keystroke_to_frame.median_ms', 20, true],
    ['typing.default_model.keystroke_to_frame.p95_ms', 31, true],
    ['typing.default_model.shown_fraction', 0.75, false],
    ['typing.gpt2_small.typed_token.median_ms', 140, true],
    ['typing.gpt2_small.typed_token.p95_ms', 210, true],
    ['typing.gpt2_small.shown_fraction', 0.5, false],
  ];
  for (const [id, value, lower] of expected) {
    assert.ok(m.has(id), id);
    assert.equal(m.get(id).value, value, id);
    assert.equal(m.get(id).lower_is_better, lower, id);
  }
  // no keystroke showed its run: the figure stays, unmeasured
  const none = byId(figures({ typing: { gpt2_small: { ...typing.gpt2_small, typed_token: null } } }));
  assert.equal(none.get('typing.gpt2_small.typed_token.median_ms').value, null);
});

test('figures() reads results.explain: the circuits, lower is better; one cell and run_command are no figures', () => {
  const t = (median_ms, p95_ms) => ({ median_ms, p95_ms, min_ms: median_ms, runs: 3 });
  const explain = {
    model: { n_layer: 12, n_head: 12, n_embd: 768 },
    tokens: 20,
    native: { threads: 2, circuits: t(5000, 5400), explain_cell: t(120, 150), run_command: t(500, 520) },
  };
  const m = byId(figures({ ...committed, explain }));
  const expected = [
    ['explain.native.circuits.median_ms', 5000],
    ['explain.native.circuits.p95_ms', 5400],
  ];
  for (const [id, value] of expected) {
    assert.ok(m.has(id), id);
    assert.equal(m.get(id).value, value, id);
    assert.equal(m.get(id).lower_is_better, true, id);
  }
  assert.ok(![...m.keys()].some((id) => id.startsWith('explain.native.run_command')), 'the load is not a figure');
  assert.ok(
    ![...m.keys()].some((id) => id.startsWith('explain.native.explain_cell')),
    "one cell's split is the load's noise",
  );
  // a figure not measured stays, so that it shows beside the previous run's
  const none = byId(figures({ explain: { ...explain, native: { threads: 2 } } }));
  assert.equal(none.get('explain.native.circuits.median_ms').value, null);
});

const fig = (id, value, lower_is_better) => ({
  id,
  label: id,
  unit: lower_is_better ? 'ms' : 'x',
  value,
  lower_is_better,
});

test('compareFigures marks more than 1.5x worse either way, not 1.4x worse nor 1.6x better', () => {
  // [id, previous, current, lower is better, worse by, a regression]
  const cases = [
    ['t.slow', 10, 16, true, 1.6, true],
    ['r.slow', 3.2, 2, false, 1.6, true],
    ['t.bit', 10, 14, true, 1.4, false],
    ['r.bit', 2.8, 2, false, 1.4, false],
    ['t.fast', 16, 10, true, 0.625, false],
    ['r.fast', 2, 3.2, false, 0.625, false],
  ];
  const previous = cases.map(([id, before, , lower]) => fig(id, before, lower));
  const current = cases.map(([id, , now, lower]) => fig(id, now, lower));
  const rows = byId(compareFigures(current, previous));
  for (const [id, , , , worseBy, regression] of cases) {
    assert.ok(Math.abs(rows.get(id).worse_by - worseBy) < 1e-9, `${id}: ${rows.get(id).worse_by} vs ${worseBy}`);
    assert.equal(rows.get(id).regression, regression, id);
  }
  assert.equal(rows.get('t.slow').value, 16);
  assert.equal(rows.get('t.slow').previous, 10);
  // the factor is a parameter
  assert.equal(byId(compareFigures(current, previous, { factor: 1.3 })).get('t.bit').regression, true);
});

test('compareFigures: a figure missing, not finite or zero on either side has no worse_by', () => {
  const rows = byId(
    compareFigures(
      [
        fig('new', 5, true),
        fig('nan', NaN, true),
        fig('zero', 0, false),
        fig('gone-before', 4, true),
        fig('null', null, true),
      ],
      [fig('nan', 3, true), fig('zero', 2, false), fig('gone-before', NaN, true), fig('null', 2, true)],
    ),
  );
  for (const id of ['new', 'nan', 'zero', 'gone-before', 'null']) {
    assert.equal(rows.get(id).worse_by, null, id);
    assert.equal(rows.get(id).regression, false, id);
  }
  assert.equal(rows.get('new').previous, null);
  assert.equal(rows.get('nan').value, null);
});

test('explainedRegressions reads "## Regressions explained" only, and only lines with a reason', () => {
  const text = [
    '# Benchmarks',
    '',
    '- `forward.simd.T16.median_ms`: outside the section, not counted',
    '',
    '## Regressions explained',
    '',
    'One line each: `- \\`figure-id\\`: why it is worse, measured how`.',
    '',
    '- `forward.simd.T64.median_ms`: the attention kernel now keeps every head apart (commit abc1234),',
    '  measured with bench/harness/before-after.mjs: 1.6x at T = 64',
    '- `demo.keystroke_to_paint_T_le_64.p95_ms`:   ',
    '- `page.main.draw_T_le_64.median_ms`',
    '* `training.default.wasm.tokens_per_s`: a second optimizer state; 1.7x, bench/harness/train-speed.mjs',
    '',
    '## Results',
    '',
    '- `ratio.simd_over_scalar`: after the section, not counted',
  ].join('\n');
  const m = explainedRegressions(text);
  assert.deepEqual([...m.keys()].sort(), ['forward.simd.T64.median_ms', 'training.default.wasm.tokens_per_s']);
  assert.equal(
    m.get('forward.simd.T64.median_ms'),
    'the attention kernel now keeps every head apart (commit abc1234), measured with bench/harness/before-after.mjs: 1.6x at T = 64',
  );
  assert.equal(explainedRegressions('# no such section\n- `a`: b\n').size, 0);
  // the committed README has the section, and each figure it explains is one of the committed full
  // run's (an id with a typo would explain nothing), with a reason
  const readme = readFileSync(path.join(ROOT, 'bench/README.md'), 'utf8');
  assert.match(readme, /^## Regressions explained$/m);
  const committed = new Set(
    figures(JSON.parse(readFileSync(path.join(ROOT, 'bench/results/results.json'), 'utf8'))).map((f) => f.id),
  );
  for (const [id, reason] of explainedRegressions(readme)) {
    assert.ok(committed.has(id), `bench/README.md explains ${id}, which is not a figure of bench/results/results.json`);
    assert.ok(reason.length > 20, `the reason given for ${id} says too little: ${reason}`);
  }
});

test('renderComparison names the previous run and marks regressions, explained or not', () => {
  const rows = compareFigures(
    [fig('t.slow', 18, true), fig('r.slow', 1, false), fig('t.same', 10, true)],
    [fig('t.slow', 10, true), fig('r.slow', 1.6, false), fig('t.same', 10, true)],
  );
  const md = renderComparison(rows, {
    explained: new Map([['r.slow', 'measured, known']]),
    previousSource: { commit: 'abc1234', generated: '2026-12-01T10:03:45.003Z' },
  });
  const lines = md.split('\n');
  assert.match(lines[0], /commit abc1234/);
  assert.match(lines[0], /2026-12-01 10:03 UTC/);
  assert.ok(lines.includes('| figure | this run | last committed full run | worse by | |'));
  const row = (id) => lines.find((l) => l.includes(`\`${id}\``));
  assert.match(row('t.slow'), /\*\*regression \(1\.8x worse\)\*\* \|$/);
  assert.match(row('r.slow'), /\*\*regression \(1\.6x worse\)\*\*, explained \|$/);
  assert.doesNotMatch(row('t.same'), /regression/);
  assert.match(row('t.same'), /\| 1\.00x \|/);
});

// bench/harness/report.mjs --only-train on a copy of the committed files: the one report path that needs no
// other raw measurement than train.json. A full run (results.quick false) fails on an unexplained
// regression, after writing its files; an explanation in the README, or --allow-regressions, passes.
test('bench/harness/report.mjs fails a full run on an unexplained regression, after writing the tables', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'headscope-bench-regressions-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tr = committed.training;
  const raw = path.join(dir, 'raw');
  const halved = tr.shapes.map((s) =>
    s.key === 'default'
      ? {
          ...s,
          subjects: { ...s.subjects, wasm: { ...s.subjects.wasm, tokens_per_s: s.subjects.wasm.tokens_per_s / 2 } },
        }
      : s,
  );
  mkdirSync(raw);
  writeFileSync(
    path.join(raw, 'train.json'),
    JSON.stringify({
      generated: tr.generated,
      machine: tr.machine,
      rounds: tr.rounds,
      chunk_seconds: tr.chunk_seconds,
      node: tr.node,
      shapes: halved,
    }),
  );
  writeFileSync(path.join(raw, 'train-page.json'), JSON.stringify(tr.start_to_induction));
  const json = path.join(dir, 'results.json'),
    readme = path.join(dir, 'README.md');
  const readmeText = readFileSync(path.join(ROOT, 'bench/README.md'), 'utf8');
  const run = (...extra) => {
    writeFileSync(json, JSON.stringify(committed));
    return spawnSync(
      process.execPath,
      [
        path.join(ROOT, 'bench/harness/report.mjs'),
        '--raw',
        raw,
        '--json',
        json,
        '--readme',
        readme,
        '--only-train',
        '--compare',
        path.join(ROOT, 'bench/results/results.json'),
        ...extra,
      ],
      { encoding: 'utf8' },
    );
  };
  const id = 'training.default.wasm.tokens_per_s';

  writeFileSync(readme, readmeText);
  let r = run();
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`\`${id.replace(/\./g, '\\.')}\`.*2\\.00x worse`));
  const written = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(written.comparison.scope, 'training');
  assert.ok(written.comparison.rows.every((x) => x.group === 'training'));
  assert.equal(written.comparison.rows.find((x) => x.id === id).regression, true);
  assert.equal(written.comparison.rows.filter((x) => x.regression).length, 1);
  const tables = readFileSync(readme, 'utf8');
  assert.match(tables, /### Against the last committed full run/);
  assert.match(tables, /\*\*regression \(2x worse\)\*\*/);
  // the tables are results.json's: --check holds on what was written
  const check = spawnSync(
    process.execPath,
    [path.join(ROOT, 'bench/harness/report.mjs'), '--json', json, '--readme', readme, '--check'],
    { encoding: 'utf8' },
  );
  assert.equal(check.status, 0, check.stderr);

  assert.equal(run('--allow-regressions').status, 0);

  writeFileSync(
    readme,
    readmeText.replace(
      '## Regressions explained\n',
      `## Regressions explained\n\n- \`${id}\`: a test's halved figure, measured by no one\n`,
    ),
  );
  r = run();
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(readFileSync(readme, 'utf8'), /\*\*regression \(2x worse\)\*\*, explained/);

  // a quick run only marks: results.quick true never fails, and keeps no comparison in results.json
  writeFileSync(readme, readmeText);
  writeFileSync(json, JSON.stringify({ ...committed, quick: true }));
  r = spawnSync(
    process.execPath,
    [
      path.join(ROOT, 'bench/harness/report.mjs'),
      '--raw',
      raw,
      '--json',
      json,
      '--tables',
      path.join(dir, 'tables.md'),
      '--only-train',
      '--compare',
      path.join(ROOT, 'bench/results/results.json'),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(JSON.parse(readFileSync(json, 'utf8')).comparison, undefined);
  assert.match(readFileSync(path.join(dir, 'comparison.md'), 'utf8'), /\*\*regression \(2x worse\)\*\*/);
});

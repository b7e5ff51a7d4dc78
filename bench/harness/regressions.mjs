// Each figure of a bench run beside the last committed full run's, and the ones more than 1.5x worse.
// Pure functions of what the caller passes (results.json objects, bench/README.md's text): no I/O.
// bench/harness/report.mjs compares and decides pass/fail, bench/harness/tables.mjs renders the comparison stored in
// results.json. Figure ids are stable: they come from results.json's keys (and targets' text), never
// from values, so two runs match figure by figure.
//   target.<slug of the target's text>          ratio.<key>, detail.<key>
//   forward.simd.T<T>.median_ms                 incremental.simd.T<T>.median_ms
//   package_api.<key>                           package_run_parts.<part>.median_ms, all_logits.ours.T<T>.median_ms
//   demo.<figure>.median_ms|p95_ms              page.<mode>.<figure>.median_ms|p95_ms
//   training.<shape>.<subject>.tokens_per_s     typing.default_model.keystroke_to_frame.median_ms|p95_ms,
//   typing.default_model.shown_fraction         typing.gpt2_small.typed_token.median_ms|p95_ms, typing.gpt2_small.shown_fraction
//   patching.native.patching.median_ms|p95_ms   patching.chromium.t<N>.first_progress|complete.median_ms|p95_ms
//   explain.native.circuits.median_ms|p95_ms

/** A slug of a text: lower case, every run of other characters one '-'. */
export const slug = (text) =>
  String(text)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

// results.ratios and results.detail, key by key: [direction, label]. Every ratio here is written as
// the other subject's time (or rate) over ours, so higher is better; the GFLOP/s are rates, higher
// is better. None of the current keys is a time. null: left out, because it does not measure our
// speed:
// - no_liftoff_over_default_*: a cross-check that the warm-up reaches V8's optimizing compiler
//   (about 1 either way when it does); a change is V8's tiering, not our speed.
// - simd128_throughput_probe_gflops_best, tile4x8_gemm_gflops_best_max: calibration probes of the
//   machine (SIMD128's multiply-add rate, a hand-written tile): they move with the CPU and the load.
// - ort_gemm_*: onnxruntime-web's own rates, the peer's speed; ours over it are the ratios above.
const RATIO_KEYS = {
  simd_over_scalar: ['higher', 'wasm SIMD128 over wasm scalar, full forward'],
  ours_over_ort_forward: ['higher', 'ours over onnxruntime-web, full forward'],
  ours_over_ort_gemm: ['higher', 'ours over onnxruntime-web, GEMM'],
  wasm_over_native: ['higher', 'wasm over native -march=native, full forward, best samples'],
  simd_over_scalar_gemm: ['higher', 'wasm SIMD128 over wasm scalar, GEMM'],
  simd_over_scalar_attention: ['higher', 'wasm SIMD128 over wasm scalar, attention kernel'],
  simd_over_scalar_incremental: ['higher', 'wasm SIMD128 over wasm scalar, incremental update'],
  ours_incremental_over_ort_forward: ['higher', "our incremental update over onnxruntime-web's full run"],
  wasm_over_native_gemm: ['higher', 'wasm over native -march=native, GEMM'],
  wasm_over_native_median: ['higher', 'wasm over native -march=native, full forward, medians'],
  wasm_over_native_sse2: ['higher', 'wasm over native SSE2, full forward, best samples'],
  ours_gemm_gflops_geomean: ['higher', 'our GEMM GFLOP/s, geomean of medians'],
  ours_gemm_gflops_best_geomean: ['higher', 'our GEMM GFLOP/s, geomean of best samples'],
  ort_gemm_gflops_geomean: [null],
  ort_gemm_gflops_best_geomean: [null],
  ort_gemm_kernel_gflops_geomean: [null],
  ours_over_ort_gemm_kernel: ['higher', "ours over onnxruntime-web's GEMM without its per-run cost"],
  all_logits_run_over_ort: ['higher', "run(text, { allLogits }) over onnxruntime-web's all-logits graph"],
  no_liftoff_over_default_forward: [null],
  no_liftoff_over_default_gemm: [null],
  simd128_throughput_probe_gflops_best: [null],
  engine_gemm_gflops_best_max: ['higher', "calibration: the engine's best GEMM sample (GFLOP/s)"],
  tile4x8_gemm_gflops_best_max: [null],
  engine_over_tile4x8_gemm: ['higher', 'calibration: engine GEMM over the hand-written 4x8 tile'],
};
// a key added later and not listed above: a time (_ms, _s) is lower-is-better, anything else is
// taken as a ratio or a rate (higher is better); calibration and onnxruntime-web's own figures stay out
function ratioKey(key) {
  if (key in RATIO_KEYS) return RATIO_KEYS[key];
  if (/^no_liftoff_|^ort_|probe|tile4x8_gemm_gflops/.test(key)) return [null];
  return [/_(ms|s)$/.test(key) ? 'lower' : 'higher', key];
}
const unitOf = (key) => (/gflops/.test(key) ? 'GFLOP/s' : /_ms$/.test(key) ? 'ms' : /_s$/.test(key) ? 's' : 'x');

// page.modes.* and demo: the timed figures (objects with median_ms and p95_ms), lower is better. Left
// out: worker_round_trip (an idle page's empty message, 0.1 ms: Chromium's timer resolution) and
// frames_late_* (whole frames, 1 or 2: a ratio of them says nothing keystroke to paint does not).
// The fractions (next_frame_fraction_*, page_thread_fraction_*) are left out too: the first follows
// from keystroke to paint and is near 0 by design in the worker mode, the second is the demo's
// choice of thread, not a speed.
const SKIP_TIMED = /^(worker_round_trip|frames_late_)/;
const PAGE_LABEL = { main: 'bench/page, model on the page thread', worker: 'bench/page, model in a Web Worker' };
const NAMES = {
  work: 'keystroke to drawn (work before the frame)',
  keystroke_to_render: 'keystroke to its rendered state',
  render: 'its update of every view',
  run: 'model run',
  draw: 'draw',
};
const words = (key) => {
  const m = /^(.*?)(_T_(le|gt)_(\d+))?$/.exec(key);
  return (NAMES[m[1]] ?? m[1].replace(/_/g, ' ')) + (m[2] ? `, T ${m[3] === 'le' ? '<=' : '>'} ${m[4]}` : '');
};
const SUBJECTS = { native: 'native', wasm: 'wasm SIMD128', wasm_relaxed: 'wasm relaxed SIMD' };
const isStat = (v) => v && typeof v === 'object' && 'median_ms' in v;

/**
 * The comparable figures of a results.json object: [{ id, label, value, unit, lower_is_better, group }].
 * group: 'engine', 'page', 'training' or 'typing' (report.mjs's --only-train compares 'training' only).
 */
export function figures(results) {
  const out = [];
  const seen = new Set();
  const add = (id, label, value, unit, lower, group) => {
    let u = id;
    for (let i = 2; seen.has(u); i++) u = `${id}-${i}`;
    seen.add(u);
    out.push({ id: u, label, value: typeof value === 'number' ? value : null, unit, lower_is_better: !!lower, group });
  };
  // always: a figure even when not measured (null), so that it shows beside the previous run's
  const timed = (prefix, label, s, group, always = false) => {
    if (!isStat(s) && !always) return;
    add(`${prefix}.median_ms`, `${label}, median`, s?.median_ms, 'ms', true, group);
    add(`${prefix}.p95_ms`, `${label}, p95`, s?.p95_ms, 'ms', true, group);
  };
  // an engine figure in ms (lower is better)
  const engineMs = (id, label, value) => add(id, label, value, 'ms', true, 'engine');
  const r = results ?? {};

  // targets: the value against its goal, in the direction the target states
  for (const t of r.targets ?? [])
    add(
      `target.${slug(t.target)}`,
      `target: ${t.target}`,
      t.value,
      t.unit ?? 'x',
      t.lower_is_better,
      t.section === 'training' ? 'training' : t.section === 'page' ? 'page' : 'engine',
    );

  for (const src of ['ratios', 'detail']) {
    for (const [k, v] of Object.entries(r[src] ?? {})) {
      const [dir, label] = ratioKey(k);
      if (dir) add(`${src === 'ratios' ? 'ratio' : 'detail'}.${k}`, label, v, unitOf(k), dir === 'lower', 'engine');
    }
  }

  // our full forward and one-token update, wasm SIMD128, each T: medians (ms)
  for (const x of r.forward ?? [])
    if (x.simd)
      engineMs(`forward.simd.T${x.T}.median_ms`, `full forward, wasm SIMD, T = ${x.T}, median`, x.simd.median_ms);
  for (const x of r.incremental ?? [])
    if (x.simd)
      engineMs(
        `incremental.simd.T${x.T}.median_ms`,
        `one-token update, wasm SIMD, T = ${x.T}, median`,
        x.simd.median_ms,
      );

  // the package's JS API: cold start (one sample each), a keystroke's run and its parts, allLogits
  const pa = r.package_api;
  if (pa) {
    const L = {
      core_instantiate_ms: 'package: cold start, instantiate the .wasm',
      model_load_ms: 'package: cold start, load and pack the model',
      first_run_ms: `package: cold start, first run (T = ${pa.T})`,
    };
    for (const [k, v] of Object.entries(pa))
      if (/_ms$/.test(k)) engineMs(`package_api.${k}`, L[k] ?? `package: ${words(k)}`, v);
  }
  const pp = r.package_run_parts;
  if (pp) {
    const L = {
      api_run: 'package: one keystroke, run()',
      core_run: 'package: one keystroke, its engine calls',
      tokenize: 'package: tokenizing the whole text',
    };
    for (const [k, v] of Object.entries(pp))
      if (isStat(v))
        engineMs(`package_run_parts.${k}.median_ms`, `${L[k] ?? `package: ${words(k)}`}, median`, v.median_ms);
  }
  for (const a of r.all_logits ?? [])
    if (a.ours)
      engineMs(
        `all_logits.ours.T${a.T}.median_ms`,
        `package: run(text, { allLogits }), T = ${a.T}, median`,
        a.ours.median_ms,
      );

  // page level: web/demo and bench/page's modes, medians and p95s (ms)
  if (r.demo)
    for (const [k, v] of Object.entries(r.demo))
      if (!SKIP_TIMED.test(k)) timed(`demo.${k}`, `web/demo: ${words(k)}`, v, 'page');
  for (const [mode, m] of Object.entries(r.page?.modes ?? {}))
    for (const [k, v] of Object.entries(m ?? {}))
      if (!SKIP_TIMED.test(k))
        timed(`page.${mode}.${k}`, `${PAGE_LABEL[mode] ?? `bench/page, ${mode}`}: ${words(k)}`, v, 'page');

  // training: our subjects' tokens/s (higher is better); PyTorch's is the peer's. train.html's time
  // to the first induction head is a target above.
  for (const s of r.training?.shapes ?? [])
    for (const [k, v] of Object.entries(s.subjects ?? {}))
      if (k !== 'torch' && v && 'tokens_per_s' in v)
        add(
          `training.${s.key}.${k}.tokens_per_s`,
          `training, ${s.key === 'default' ? 'default preset' : s.key}: ${SUBJECTS[k] ?? k}, tokens/s`,
          v.tokens_per_s,
          'tokens/s',
          false,
          'training',
        );

  // typing in the demo (headless Chromium): keystroke to frame and GPT-2 small's typed token are
  // times (lower is better), the keystrokes shown a fraction (higher is better)
  const ty = r.typing;
  if (ty?.default_model) {
    timed(
      'typing.default_model.keystroke_to_frame',
      'typing, default model: keystroke to frame',
      ty.default_model.keystroke_to_frame,
      'typing',
      true,
    );
    add(
      'typing.default_model.shown_fraction',
      'typing, default model: keystrokes shown',
      ty.default_model.shown_fraction,
      'fraction',
      false,
      'typing',
    );
  }
  if (ty?.gpt2_small) {
    const n = ty.gpt2_small.tokens;
    timed(
      'typing.gpt2_small.typed_token',
      `typing, GPT-2 small's shape${n ? ` at ${n} tokens` : ''}: typed token`,
      ty.gpt2_small.typed_token,
      'typing',
      true,
    );
    add(
      'typing.gpt2_small.shown_fraction',
      "typing, GPT-2 small's shape: keystrokes that showed their own run",
      ty.gpt2_small.shown_fraction,
      'fraction',
      false,
      'typing',
    );
  }
  // activation patching (bench/harness/patch-bench.mjs): times, lower is better
  const ap = r.patching;
  if (ap?.native) {
    const at = `${ap.model?.n_layer} layers x ${ap.model?.n_head} heads, ${ap.tokens} tokens`;
    timed(
      'patching.native.patching',
      `patching (${at}): native, ${ap.native.threads} threads`,
      ap.native.patching,
      'engine',
      true,
    );
    for (const [n, v] of Object.entries(ap.chromium?.threads ?? {})) {
      timed(
        `patching.chromium.t${n}.first_progress`,
        `patching (${at}): Chromium, ${n} thread(s), the attribution map`,
        v.first_progress,
        'page',
        true,
      );
      timed(
        `patching.chromium.t${n}.complete`,
        `patching (${at}): Chromium, ${n} thread(s), complete`,
        v.complete,
        'page',
        true,
      );
      add(
        `patching.chromium.t${n}.first_call.first_progress_ms`,
        `patching (${at}): Chromium, ${n} thread(s), the attribution map in the first call after the load`,
        v.first_call?.first_progress_ms,
        'ms',
        true,
        'page',
      );
    }
  }
  // score splits and circuits (bench/harness/explain-bench.mjs): times, lower is better
  const ex = r.explain;
  if (ex?.native) {
    const at = `${ex.model?.n_layer} layers x ${ex.model?.n_head} heads`;
    timed(
      'explain.native.circuits',
      `circuits (${at}): native, ${ex.native.threads} threads`,
      ex.native.circuits,
      'engine',
      true,
    );
    // one cell's split (tens of ms) is measured as the difference of two commands that each load
    // the model (hundreds of ms, moving by as much under load): its table shows it, but a 1.5x
    // change of it is the machine's noise, not a regression to find, so it is not compared
  }
  return out;
}

const usable = (x) => typeof x === 'number' && isFinite(x) && x > 0;

/**
 * Each current figure beside the previous run's (matched by id): { id, label, unit, lower_is_better,
 * group, value, previous, worse_by, regression }. worse_by: how many times worse this run is (this
 * time over the previous one's, or the previous rate over this one's; below 1: better); null when
 * either side is missing, not finite or zero. regression: worse_by > factor.
 */
export function compareFigures(current, previous, { factor = 1.5 } = {}) {
  const prev = new Map((previous ?? []).map((p) => [p.id, p]));
  return (current ?? []).map((c) => {
    const p = prev.get(c.id);
    const value = typeof c.value === 'number' && isFinite(c.value) ? c.value : null;
    const before = p && typeof p.value === 'number' && isFinite(p.value) ? p.value : null;
    const worse_by = usable(value) && usable(before) ? (c.lower_is_better ? value / before : before / value) : null;
    return {
      id: c.id,
      label: c.label,
      unit: c.unit,
      lower_is_better: c.lower_is_better,
      group: c.group,
      value,
      previous: before,
      worse_by,
      regression: worse_by !== null && worse_by > factor,
    };
  });
}

/**
 * bench/README.md's "## Regressions explained": a Map of figure id -> reason, from lines
 * "- `figure-id`: why it is worse, measured how" (a reason may go on over indented lines).
 * An id with an empty reason is not explained.
 */
export function explainedRegressions(readmeText) {
  const out = new Map();
  const lines = String(readmeText ?? '').split('\n');
  const start = lines.findIndex((l) => /^##\s+Regressions explained\s*$/.test(l));
  if (start < 0) return out;
  let id = null,
    reason = '';
  const flush = () => {
    if (id && reason.trim()) out.set(id, reason.trim());
    id = null;
    reason = '';
  };
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,2}\s/.test(line)) break;
    const m = /^[-*]\s+`([^`]+)`\s*:(.*)$/.exec(line);
    if (m) {
      flush();
      id = m[1].trim();
      reason = m[2];
    } else if (id && /^\s+\S/.test(line)) reason += ' ' + line.trim();
    else flush();
  }
  flush();
  return out;
}

const num = (x, unit) => {
  if (x === null || x === undefined || !isFinite(x)) return '–';
  if (unit === 'fraction') return `${(100 * x).toFixed(0)}%`;
  const a = Math.abs(x);
  const s =
    a >= 1000 ? Math.round(x).toLocaleString('en-US') : x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 0.1 ? 2 : 4);
  return unit && unit !== 'x' ? `${s} ${unit}` : `${s}${unit === 'x' ? 'x' : ''}`;
};
const factorText = (x) => `${+x.toFixed(2)}x`;

/**
 * Markdown: one line naming the previous run, then a table "figure | this run | last committed full
 * run | worse by | " with each regression marked. explained: a Map id -> reason (or each row's own
 * `explained`); previousSource: { commit, files_changed, generated, from } of the previous run.
 */
export function renderComparison(rows, { explained = new Map(), previousSource = {}, factor = 1.5, scope } = {}) {
  const p = previousSource ?? {};
  const when = p.generated
    ? `run of ${String(p.generated).slice(0, 16).replace('T', ' ')} UTC`
    : 'run of an unknown date';
  const commit = p.commit
    ? `commit ${p.commit}${p.files_changed ? ` with ${p.files_changed} files changed` : ''}`
    : 'an unknown commit';
  const md = [];
  md.push(
    `The last committed full run${p.from ? ` (\`${p.from}\`)` : ''}: ${commit}, ${when}. ` +
      `Worse by: this run's time over that run's, or that run's rate over this run's (below 1: better); more than ${factorText(factor)} is marked` +
      `${scope === 'training' ? '. Training figures only (BENCH_ONLY=train)' : ''}.`,
    '',
  );
  md.push('| figure | this run | last committed full run | worse by | |', '|---|---|---|---|---|');
  for (const r of rows) {
    const why = explained.get?.(r.id) ?? r.explained;
    const mark = r.regression ? `**regression (${factorText(r.worse_by)} worse)**${why ? ', explained' : ''}` : '';
    md.push(
      `| ${r.label} (\`${r.id}\`) | ${num(r.value, r.unit)} | ${num(r.previous, r.unit)} | ${r.worse_by === null ? '–' : `${r.worse_by.toFixed(2)}x`} | ${mark} |`,
    );
  }
  return md.join('\n') + '\n';
}

// The training rows of the benchmark: results.json's `training` object and its targets, from the raw
// files of bench/harness/train-speed.mjs (train.json) and bench/harness/train-page-bench.mjs (train-page.json), and
// their tables (rendered from results.json by bench/harness/tables.mjs). Used by bench/harness/report.mjs, in the
// full report and with --only-train.

const f = (x, d = 2) => (x === undefined || x === null || !isFinite(x) ? '–' : x.toFixed(d));
const int = (x) => (x === undefined || x === null || !isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'));

/** { training, targets } from the raw files (either may be null). */
export function trainingResults(train, page) {
  const shapes = train?.shapes ?? [];
  const def = shapes.find((s) => s.key === 'default');
  const targets = [];
  const target = (name, value, goal, extra = {}) => {
    const met = isFinite(value) && (extra.lower_is_better ? value < goal : value >= goal);
    targets.push({ section: 'training', target: name, value, goal, ...extra, met });
  };
  if (def) {
    target(
      'training, default preset: wasm SIMD128 >= 2x PyTorch (CPU, 1 thread) tokens/s',
      def.ratios.wasm_over_torch,
      2,
    );
    if (def.ratios.wasm_relaxed_over_torch !== undefined)
      target(
        'training, default preset: wasm relaxed SIMD (the build Chromium loads) >= 2x PyTorch (CPU, 1 thread) tokens/s',
        def.ratios.wasm_relaxed_over_torch,
        2,
      );
    target('training, default preset: native >= 4x PyTorch (CPU, 1 thread) tokens/s', def.ratios.native_over_torch, 4);
    // at equal threads beyond one (train-speed.mjs --threads): the CLI's --threads N against torch.set_num_threads(N)
    for (const [k, v] of Object.entries(def.ratios)) {
      const m = /^native_(\d+)t_over_torch_\1t$/.exec(k);
      if (m) target(`training, default preset: native >= 4x PyTorch at ${m[1]} threads each, tokens/s`, v, 4);
    }
  }
  if (page) {
    // not reached within the page bench's time limit: NaN, a miss with no value
    const s = page.induction_at_ms === null ? NaN : page.induction_at_ms / 1000;
    target(
      'train.html, default preset: Start to the first head with induction score >= 0.4, headless Chromium, < 60 s',
      s,
      page.target_ms / 1000,
      { unit: 's', lower_is_better: true },
    );
  }
  const training =
    train || page
      ? {
          generated: train?.generated,
          machine: train?.machine,
          rounds: train?.rounds,
          chunk_seconds: train?.chunk_seconds,
          node: train?.node,
          shapes,
          start_to_induction: page ?? null,
        }
      : null;
  return { training, targets };
}

/** Markdown lines of the training tables, from results.json's `training`. */
export function trainingTables(training) {
  const md = [];
  const shapes = training.shapes ?? [];
  if (shapes.length) {
    const la = (xs) => xs.map((x) => x.toFixed(1)).join(' ');
    const torch = (shapes.find((s) => s.key === 'default') ?? shapes[0]).info?.torch?.torch ?? '?';
    md.push(
      `Run of ${training.generated?.slice(0, 16).replace('T', ' ') ?? '?'} UTC. Tokens/s of full training steps, median over ${training.rounds} interleaved rounds of about ${training.chunk_seconds} s per subject; ` +
        `node ${training.node}, PyTorch ${torch} (1 thread); load average ${la(training.machine.loadavg_before)} before, ${la(training.machine.loadavg_after)} after.`,
      '',
    );
    const hasRelaxed = shapes.some((s) => s.subjects.wasm_relaxed);
    md.push(
      `| shape | native | wasm SIMD128 |${hasRelaxed ? ' wasm relaxed SIMD |' : ''} PyTorch, 1 thread | native / PyTorch | wasm / PyTorch |${hasRelaxed ? ' relaxed / PyTorch |' : ''} wasm / native |`,
      `|---|---|---|${hasRelaxed ? '---|' : ''}---|---|---|${hasRelaxed ? '---|' : ''}---|`,
    );
    for (const s of shapes) {
      const sh = s.shape;
      const name = `${s.key === 'default' ? 'default preset' : s.key}: ${sh.n_layer} x ${sh.n_head} heads, n_embd ${sh.n_embd}, B ${sh.batch_size}, T ${sh.seq_len}, V ${sh.vocab_size}`;
      const tp = (k) => int(s.subjects[k]?.tokens_per_s);
      // each ratio with the first and third quartile of its per-round values: how much the load moved it
      const r = (k) => {
        const q = s.ratio_quartiles?.[k];
        return `${f(s.ratios[k])}x${q ? ` (${f(q[0])}-${f(q[1])})` : ''}`;
      };
      md.push(
        `| ${name} | ${tp('native')} | ${tp('wasm')} |${hasRelaxed ? ` ${tp('wasm_relaxed')} |` : ''} ${tp('torch')} | ${r('native_over_torch')} | ${r('wasm_over_torch')} |${hasRelaxed ? ` ${r('wasm_relaxed_over_torch')} |` : ''} ${r('wasm_over_native')} |`,
      );
    }
    md.push('', 'Ratios: median of the per-round ratios, in brackets their first to third quartile.', '');
  }
  const page = training.start_to_induction;
  if (page) {
    md.push(
      `train.html in headless Chromium ${page.chromium}, Start to the first head with induction score >= 0.4:`,
      '',
    );
    md.push(
      "| run | preset | seconds of training | step | wall seconds from the click | tokens/s (probes included) | tokens/s in the page's status line | 1-minute load average at Start |",
      '|---|---|---|---|---|---|---|---|',
    );
    page.runs.forEach((r, i) =>
      md.push(
        `| ${i + 1} | ${r.preset} | ${r.induction_at_ms === null ? `not reached (${r.steps_when_read} steps)` : f(r.induction_at_ms / 1000, 1)} | ${r.induction_at_step ?? '–'} | ${f(r.wall_ms_from_click / 1000, 1)} | ${int(r.tokens_per_s)} | ${int(r.page_status_tokens_per_s)} | ${f(r.loadavg_1min_at_start, 1)} |`,
      ),
    );
    md.push('');
  }
  return md;
}

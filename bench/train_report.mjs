// The training rows of the benchmark report: from build/bench/train.json
// (bench/train_speed.mjs) and build/bench/train-page.json (bench/train_page_bench.mjs), the results'
// `training` object, its targets and the markdown section. Used by bench/report.mjs, in the full
// report and with --only-train (which updates bench/results.json and bench/results.md in place).

export const SECTION_TITLE = '## Training speed';

const f = (x, d = 2) => (x === undefined || x === null || !isFinite(x) ? '–' : x.toFixed(d));
const int = (x) => (x === undefined || x === null || !isFinite(x) ? '–' : Math.round(x).toLocaleString('en-US'));

// "met", or by how much it is missed: the factor still to gain, and the shortfall in percent
function verdict(value, goal, lowerIsBetter = false) {
  if (value === null || value === undefined || !isFinite(value)) return { met: false, text: 'not measured' };
  const met = lowerIsBetter ? value < goal : value >= goal;
  if (met) return { met, text: 'met' };
  const factor = lowerIsBetter ? value / goal : goal / value;
  const short = lowerIsBetter ? `${f(100 * (value / goal - 1), 0)}% over` : `${f(100 * (1 - value / goal), 0)}% short`;
  return { met, text: `missed by ${f(factor)}x (${short})` };
}

/** { training, targets, md } from the raw files (either may be null). */
export function trainingReport(train, page) {
  const shapes = train?.shapes ?? [];
  const def = shapes.find((s) => s.key === 'default');
  const targets = [];
  if (def) {
    const w = def.ratios.wasm_over_torch, n = def.ratios.native_over_torch;
    targets.push({ section: 'training', target: 'training, default preset: wasm SIMD128 >= 2x PyTorch (CPU, 1 thread) tokens/s', value: w, goal: 2, met: w >= 2, verdict: verdict(w, 2).text });
    const r = def.ratios.wasm_relaxed_over_torch;
    if (r !== undefined) targets.push({ section: 'training', target: 'training, default preset: wasm relaxed SIMD (the build Chromium loads) >= 2x PyTorch (CPU, 1 thread) tokens/s', value: r, goal: 2, met: r >= 2, verdict: verdict(r, 2).text });
    targets.push({ section: 'training', target: 'training, default preset: native >= 4x PyTorch (CPU, 1 thread) tokens/s', value: n, goal: 4, met: n >= 4, verdict: verdict(n, 4).text });
  }
  const pageMs = page?.induction_at_ms ?? null;
  if (page) {
    const v = verdict(pageMs, page.target_ms, true);
    targets.push({ section: 'training', target: 'train.html, default preset: Start to the first head with induction score >= 0.4, headless Chromium, < 60 s', value: pageMs === null ? NaN : pageMs / 1000, goal: page.target_ms / 1000, met: v.met, unit: 's', verdict: pageMs === null ? `not reached within the bench's time limit` : v.text });
  }
  const training = train || page ? {
    generated: train?.generated,
    machine: train?.machine,
    rounds: train?.rounds,
    shapes,
    start_to_induction: page ?? null,
  } : null;

  const md = [];
  if (!training) return { training, targets, md };
  md.push(SECTION_TITLE, '');
  if (train) {
    const la = (xs) => xs.map((x) => x.toFixed(1)).join(' ');
    const t0 = def ?? shapes[0];
    md.push(`Full training steps, tokens/s (batch x T tokens per step; median over ${train.rounds} rounds). Every subject does the same step: a fresh batch, forward, mean next-token cross-entropy, backward, clip the global gradient norm at 1.0, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay). `
      + `Subjects: our native build (\`headscope train\`, -O3 -march=native); our wasm build in Node ${train.node} through the package's \`createTrainer()\`, one \`step(1)\` call per step as the page's Worker does, SIMD128 and the relaxed-SIMD build Chromium loads (\`node --experimental-wasm-relaxed-simd\`); `
      + `PyTorch ${t0?.info?.torch?.torch ?? ''} on CPU with \`torch.set_num_threads(1)\` (bench/train_torch.py: the repository's reference GPT-2, scripts/common/gpt2_torch.py, with \`AdamW(foreach=True)\`, its faster optimizer path here). `
      + `Interleaved in one run (bench/train_speed.mjs): in each round every subject trains a chunk of about ${train.chunk_seconds} s in a rotating order; ratios are medians of the per-round ratios. `
      + `Load average ${la(train.machine.loadavg_before)} before, ${la(train.machine.loadavg_after)} after, on ${train.machine.cpus} cores shared with other jobs (a PyTorch training run may hold one core): absolute figures move with the load, the interleaved ratios much less.`, '');
    const hasRelaxed = shapes.some((s) => s.subjects.wasm_relaxed);
    md.push(`| shape | native | wasm SIMD128 |${hasRelaxed ? ' wasm relaxed SIMD |' : ''} PyTorch, 1 thread | native / PyTorch | wasm / PyTorch |${hasRelaxed ? ' relaxed / PyTorch |' : ''} wasm / native |`,
      `|---|---|---|${hasRelaxed ? '---|' : ''}---|---|---|${hasRelaxed ? '---|' : ''}---|`);
    for (const s of shapes) {
      const sh = s.shape;
      const name = `${s.key === 'default' ? 'default preset' : s.key}: ${sh.n_layer} x ${sh.n_head} heads, n_embd ${sh.n_embd}, B ${sh.batch_size}, T ${sh.seq_len}, V ${sh.vocab_size}`;
      const tp = (k) => int(s.subjects[k]?.tokens_per_s);
      md.push(`| ${name} | ${tp('native')} | ${tp('wasm')} |${hasRelaxed ? ` ${tp('wasm_relaxed')} |` : ''} ${tp('torch')} | ${f(s.ratios.native_over_torch)}x | ${f(s.ratios.wasm_over_torch)}x |${hasRelaxed ? ` ${f(s.ratios.wasm_relaxed_over_torch)}x |` : ''} ${f(s.ratios.wasm_over_native)}x |`);
    }
    md.push('');
    md.push('Spread of the per-round ratios (first to third quartile): ' + shapes.map((s) => `${s.key}: ` + Object.entries(s.ratio_quartiles ?? {}).map(([k, [a, b]]) => `${k.replace(/_/g, ' ')} ${f(a)}-${f(b)}`).join(', ')).join('; ') + '.', '');
    md.push('Per-round tokens/s (min to max): ' + shapes.map((s) => `${s.key}: ` + Object.entries(s.subjects).map(([k, v]) => `${k} ${int(v.min)}-${int(v.max)}`).join(', ')).join('; ') + '.', '');
    if (shapes.length > 1) {
      // where PyTorch's BLAS starts to win: the first width at which each of our builds falls below 1x
      const byWidth = [...shapes].sort((a, b) => a.shape.n_embd - b.shape.n_embd);
      const cross = (k) => {
        const i = byWidth.findIndex((s) => s.ratios[k] < 1);
        if (i < 0) return `ahead of PyTorch at every width measured (up to n_embd ${byWidth.at(-1).shape.n_embd})`;
        if (i === 0) return `behind PyTorch already at n_embd ${byWidth[0].shape.n_embd}`;
        return `ahead at n_embd ${byWidth[i - 1].shape.n_embd} (${f(byWidth[i - 1].ratios[k])}x), behind from n_embd ${byWidth[i].shape.n_embd} (${f(byWidth[i].ratios[k])}x)`;
      };
      md.push(`Crossover (PyTorch's BLAS against our fused step as the width grows): native ${cross('native_over_torch')}; wasm SIMD128 ${cross('wasm_over_torch')}`
        + (byWidth[0].ratios.wasm_relaxed_over_torch !== undefined ? `; wasm relaxed SIMD ${cross('wasm_relaxed_over_torch')}` : '') + '.', '');
    }
  }
  if (page) {
    const r0 = page.runs;
    md.push(`Start to the first induction head in headless Chromium ${page.chromium} (bench/train_page_bench.mjs): the demo site's train.html, only run A's Start clicked (preset ${r0[0]?.preset ?? 'induction'}), until the panel reports a head with induction score >= 0.4 on its probe (data-induction-at-ms: training time since Start). `
      + r0.map((r, i) => (r.induction_at_ms === null ? `run ${i + 1}: not reached in ${f(r.wall_ms_from_click / 1000, 0)} s (${r.steps_when_read} steps)`
        : `run ${i + 1}: ${f(r.induction_at_ms / 1000, 1)} s of training (step ${r.induction_at_step}; ${int(r.tokens_per_s)} tokens/s including the page's probes${r.page_status_tokens_per_s ? `, ${int(r.page_status_tokens_per_s)} tokens/s in the page's status line when read` : ''}), ${f(r.wall_ms_from_click / 1000, 1)} s wall time from the click, 1-minute load average ${f(r.loadavg_1min_at_start, 1)} at Start`)).join('; ') + '.', '');
  }
  if (targets.length) {
    md.push('| target | measured | verdict |', '|---|---|---|');
    for (const t of targets) md.push(`| ${t.target} | ${f(t.value)}${t.unit ? ' ' + t.unit : 'x'} | ${t.met ? 'met' : `**${t.verdict}**`} |`);
    md.push('');
  }
  return { training, targets, md };
}

/** results.md with the training section replaced (or inserted before `before`, else appended). */
export function spliceSection(text, section, before = '## Targets met and missed') {
  const lines = text.split('\n');
  const start = lines.indexOf(SECTION_TITLE);
  if (start >= 0) {
    let end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
    if (end < 0) end = lines.length;
    lines.splice(start, end - start, ...section);
    return lines.join('\n');
  }
  const at = lines.findIndex((l) => l.startsWith(before));
  if (at >= 0) lines.splice(at, 0, ...section);
  else lines.push('', ...section);
  return lines.join('\n');
}

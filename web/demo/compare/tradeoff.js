// The comparison page's plain-words sentence on the head-count trade-off, computed from the numbers
// on the page (no DOM; unit-tested in tests/js/unit/tradeoff.test.js).
// entries: [{ info: { config: { nHead, headSize } }, valLoss, valPpl, params, speedMs }]

export function fmtParams(n) {
  return n >= 1e6 ? `${(n / 1e6).toFixed(3)} M` : `${(n / 1e3).toFixed(1)} k`;
}

/** One plain sentence (or two) on the trade-off, from the numbers on the page. */
export function tradeoffSentence(entries) {
  const withLoss = entries.filter((e) => e.info && Number.isFinite(e.valLoss));
  const parts = [];
  const name = (e) => `the ${e.info.config.nHead}-head model`;
  if (withLoss.length >= 2) {
    const byHeads = [...withLoss].sort((a, b) => a.info.config.nHead - b.info.config.nHead);
    const best = withLoss.reduce((a, b) => (b.valLoss < a.valLoss ? b : a));
    const worst = withLoss.reduce((a, b) => (b.valLoss > a.valLoss ? b : a));
    const fewest = byHeads[0];
    const most = byHeads[byHeads.length - 1];
    let s = `On the validation text ${name(best)} predicts best (loss ${best.valLoss.toFixed(3)}, perplexity ${best.valPpl.toFixed(1)}) and ${name(worst)} worst (${worst.valLoss.toFixed(3)}, perplexity ${worst.valPpl.toFixed(1)})`;
    const gap = worst.valLoss - best.valLoss;
    if (gap < 0.01) s += ': the number of heads made almost no difference';
    else if (best === most)
      s += `: splitting the same width into more heads helped, by ${gap.toFixed(3)} nats per token from ${fewest.info.config.nHead} to ${most.info.config.nHead} heads`;
    else if (best === fewest)
      s += `: here more, narrower heads did not help (${gap.toFixed(3)} nats per token worse at the end of the range)`;
    else
      s += `: more heads helped up to ${best.info.config.nHead}, and ${most.info.config.nHead} narrower heads (width ${most.info.config.headSize}) gave some of that back`;
    const ps = withLoss.map((e) => e.params).filter(Boolean);
    if (ps.length) {
      const spread = (Math.max(...ps) - Math.min(...ps)) / Math.max(...ps);
      s +=
        spread < 0.01
          ? `, with the same number of parameters (${fmtParams(Math.max(...ps))})`
          : `, with ${fmtParams(Math.min(...ps))} to ${fmtParams(Math.max(...ps))} parameters`;
    }
    parts.push(`${s}.`);
  }
  const timed = entries.filter((e) => e.info && Number.isFinite(e.speedMs));
  if (timed.length >= 2) {
    const byHeads = [...timed].sort((a, b) => a.info.config.nHead - b.info.config.nHead);
    const a = byHeads[0];
    const b = byHeads[byHeads.length - 1];
    const ratio = b.speedMs / a.speedMs;
    const cmp =
      ratio > 1.15
        ? `takes ${ratio.toFixed(1)}× as long as`
        : ratio < 0.87
          ? `takes less time (${ratio.toFixed(2)}×) than`
          : 'takes about as long as';
    parts.push(
      `In this browser ${name(b)} ${cmp} ${name(a)} on this text (${b.speedMs.toFixed(1)} vs ${a.speedMs.toFixed(1)} ms${ratio > 1.15 ? ': one attention pattern and softmax per head, each over a narrower slice' : ''}).`,
    );
  }
  return parts.join(' ') || 'Waiting for the models and their cards…';
}

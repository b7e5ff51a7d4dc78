// "How heads combine": what each head of a layer writes into the residual stream through its rows
// of W_O, as the norm of its contribution at the focused token. combineScene() is the pure scene
// builder; CombineView shows it and picks a head on click.
import { heat, headColour, quoteToken } from '../theme.js';
import { contributionIndex } from '../../lib/result.js';
import { focusToken } from './describe.js';
import { SceneView } from './scene-view.js';

/** "How heads combine": each head's contribution norm at the focused token in one layer. */
export function combineScene(result, state, theme) {
  const { T, nHead, tokens } = result;
  const layer = state.layer;
  const t = focusToken(result, state);
  const norms = [];
  for (let h = 0; h < nHead; h++) norms.push(result.contributionNorms[contributionIndex(result, layer, h, t)]);
  const max = Math.max(1e-9, ...norms);
  const rowH = 22;
  const labelW = 62;
  const barW = 230;
  const width = labelW + barW + 70;
  const items = [];
  items.push({ type: 'text', x: 8, y: 12, text: `Layer ${layer}, token ${t}: ${quoteToken(tokens[t].text)}`, size: 14, weight: 'bold', fill: theme.fg });
  // the combination step: head outputs side by side -> × W_O -> one update
  const dy = 40;
  items.push({ type: 'text', x: 8, y: dy, text: 'head outputs, side by side', size: 10, fill: theme.muted });
  const segW = Math.min(26, 170 / nHead);
  for (let h = 0; h < nHead; h++) {
    const x = 8 + h * segW;
    items.push({ type: 'rect', x, y: dy + 10, w: segW - 2, h: 18, fill: heat(theme, 0.15 + (0.85 * norms[h]) / max), rx: 2, data: { head: h } });
    if (segW >= 16) items.push({ type: 'text', x: x + (segW - 2) / 2, y: dy + 38, text: `h${h}`, size: 9, fill: theme.muted, anchor: 'middle' });
  }
  const ax = 8 + nHead * segW + 8;
  items.push({ type: 'text', x: ax, y: dy + 19, text: '× W_O →', size: 12, fill: theme.fg, weight: 'bold' });
  items.push({ type: 'rect', x: ax + 62, y: dy + 10, w: 70, h: 18, fill: theme.faint, stroke: theme.muted, strokeWidth: 1, rx: 3 });
  items.push({ type: 'text', x: ax + 97, y: dy + 19, text: 'one update', size: 10, fill: theme.fg, anchor: 'middle' });
  items.push({ type: 'text', x: ax + 62, y: dy + 38, text: 'added to the token', size: 9, fill: theme.muted });
  const y0 = dy + 72;
  items.push({ type: 'text', x: 8, y: y0 - 12, text: 'size of each head\'s share (its output × its rows of W_O)', size: 11, fill: theme.muted });
  const height = y0 + nHead * rowH + 8;
  for (let h = 0; h < nHead; h++) {
    const y = y0 + h * rowH;
    const sel = h === state.head;
    items.push({ type: 'text', x: labelW - 6, y: y + rowH / 2, text: `head ${h}`, size: 12, fill: theme.fg, anchor: 'end', weight: sel ? 'bold' : undefined });
    items.push({ type: 'rect', x: labelW, y: y + 3, w: barW, h: rowH - 6, fill: theme.faint, rx: 2 });
    items.push({ type: 'rect', x: labelW, y: y + 3, w: Math.max(1, (barW * norms[h]) / max), h: rowH - 6, fill: sel ? theme.accent : headColour(theme, 0), rx: 2, data: { head: h }, cls: 'hs-bar' });
    items.push({ type: 'text', x: labelW + barW + 6, y: y + rowH / 2, text: norms[h].toFixed(2), size: 11, fill: theme.muted });
  }
  return { scene: { width, height, background: theme.bg, font: theme.font, items }, norms };
}

/** How heads combine: bars of each head's contribution norm at the focused token. */
export class CombineView extends SceneView {
  constructor(host, { onSelectHead } = {}) {
    super(host);
    host.addEventListener('click', (e) => {
      const node = e.target?.closest?.('[data-head]');
      if (node) onSelectHead?.(Number(node.dataset.head));
    });
  }

  update(result, state, theme) {
    const { scene } = combineScene(result, state, theme);
    this.show(scene, `How the heads of layer ${state.layer} combine at token ${focusToken(result, state)}`);
  }
}

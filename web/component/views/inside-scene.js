// "Inside this head": one head's computation for the focused query token, step by
// step, with the model's own numbers (HeadscopeModel.inspectHead()):
//   1 query    the token's input, through W_Q, becomes its query q (d_head numbers)
//   2 keys     every token up to it has a key k_j; later tokens are masked
//   3 scores   q . k_j, the sum of d_head products (shown for one key), divided by sqrt(d_head)
//   4 weights  the softmax of the scores: the heatmap's row
//   5 values   each value v_j scaled by its weight; they add up to z
//   6 write    z times the head's rows of W_O: its share of the token's update
// insideScene() is the pure scene builder (tested in Node), one step at a time; InsideView
// (views/inside.js) shows it. The numbers and sentences are model/inside.js's; the signed colours
// are the theme's (signedColour).
import { textWidth, wrap } from './scene.js';
import { insidePen } from './inside-pen.js';
import { heat, signedColour, tokenLabel, quoteToken } from '../runtime/theme.js';
import { focusToken, clamp } from '../model/describe.js';
import {
  INSIDE_STEPS,
  clampStep,
  f2,
  f4,
  signed,
  rowOf,
  strongestInsideKey,
  shownKeys,
  dotProducts,
  writeNorm,
  insideSentence,
} from '../model/inside.js';

const maxAbs = (...arrays) =>
  arrays.reduce((m, a) => {
    for (const x of a) if (Math.abs(x) > m) m = Math.abs(x);
    return m;
  }, 0);

/**
 * The scene of one step for the focused query token (state.token, default the last) of `inside`
 * (HeadscopeModel.inspectHead()'s data).
 *   step:    1..6 (INSIDE_STEPS)
 *   key:     the key the scores step shows the products of, and the rows highlight (default: the
 *            strongest)
 *   width:   the room the picture should fit (px): the cells shrink to 3 px at d_head 64 on a phone
 *   caption: the step's sentence in the picture too (exports; the page shows it as text)
 * layout: { i, key, keys, rows: Map(key -> y), rowH, cellW, cellH, x0, cursor: { x, y, n, w } | null }.
 * Cells carry data-tip (the tooltip's text); key rows data-key; the weights step's numbers data-weight
 * and the scores step's data-score, with the full float32 value.
 */
export function insideScene(inside, state, theme, { step = 1, key = null, width = 640, caption = false } = {}) {
  step = clampStep(step);
  const { T, headSize: HS, nEmbd, tokens } = inside;
  const i = focusToken(inside, state);
  const k0 = Number.isInteger(key) && key >= 0 && key <= i ? key : strongestInsideKey(inside, i);
  const { keys, hidden } = shownKeys(inside, i, k0);
  const fs = 11;
  const labels = tokens.map((t) => tokenLabel(t.text, 14));
  const later = Array.from({ length: Math.min(2, T - 1 - i) }, (_, n) => labels[i + 1 + n]);
  const rowLabels = {
    1: [`x ${labels[i]}`, `q ${labels[i]}`],
    2: [`q ${labels[i]}`, ...keys.map((j) => labels[j]), ...later],
    3: [`q ${labels[i]}`, `q × k ${labels[k0]}`, ...keys.map((j) => labels[j]), ...later],
    4: [...keys.map((j) => labels[j]), ...later, `row ${i}`],
    5: [...keys.map((j) => `${f2(inside.attention[i * T + j])} × ${labels[j]}`), `z = Σ ${labels[i]}`],
    6: [`z ${labels[i]}`, 'write'],
  }[step];
  // bold labels are about 8% wider than textWidth's estimate
  const labelW = Math.min(170, Math.max(44, ...rowLabels.map((t) => 1.08 * textWidth(t, fs)))) + 10;
  const x0 = 8 + labelW;
  // the columns right of the cells, per step
  // (narrow: the scores step drops its q · k column, which the picked key's sum line still gives)
  const fullExtra = { 1: 0, 2: 0, 3: 124, 4: 0, 5: 56, 6: 0 }[step];
  const narrow = step === 3 && Math.min(width, 900) - x0 - fullExtra - 16 < 4 * HS;
  const extraW = narrow ? 64 : fullExtra;
  const room = Math.max(3 * HS, Math.min(width, 900) - x0 - extraW - 16);
  const cellW = clamp(Math.floor(room / HS), 3, 18);
  const scoreX = narrow ? 56 : 116; // the ÷ sqrt(d_head) column's right edge, after the cells
  const cellH = clamp(cellW, 9, 16);
  const rowH = cellH + 6;
  const blockW = HS * cellW;
  const items = [];
  // the room given, or more where even 3 px cells do not fit it (the picture then shrinks to fit)
  // as wide as what the step draws, within the room given; wider where even 3 px cells do not fit
  // the room (the page then shrinks the picture to fit)
  const needed = Math.ceil(x0 + Math.max(blockW, step === 1 ? 150 : 0) + extraW + 16);
  const barW = clamp(width - x0 - 170, 80, 220);
  const stripW = Math.min(width - x0 - 16, Math.max(120, T * 12));
  const natural = step === 4 ? Math.ceil(x0 + Math.max(74 + barW + 56, stripW + 16)) : needed;
  const sceneW = Math.max(320, Math.min(Math.round(width), natural), needed);
  const title = `Layer ${inside.layer}, head ${inside.head}, token ${i} ${quoteToken(tokens[i].text)} · step ${step} of 6: ${INSIDE_STEPS[step - 1].name}`;
  let y = 12;
  for (const line of wrap(title, 13, sceneW - 16)) {
    items.push({ type: 'text', x: 8, y, text: line, size: 13, weight: 'bold', fill: theme.fg });
    y += 18;
  }
  if (caption) {
    for (const line of wrap(insideSentence(inside, i, step, k0), 11, sceneW - 16)) {
      items.push({ type: 'text', x: 8, y, text: line, size: 11, fill: theme.muted });
      y += 15;
    }
    y += 4;
  }
  const rows = new Map();
  let cursor = null;
  const { tipCells, label, rowBand, legend, laterNote, hiddenNote, header } = insidePen(items, theme, {
    i,
    k0,
    T,
    keys,
    hidden,
    labels,
    fs,
    x0,
    cellH,
    rowH,
    blockW,
    sceneW,
  });
  const qRow = rowOf(inside.q, i, HS);
  const qkMax = maxAbs(qRow, ...keys.map((j) => rowOf(inside.k, j, HS)));

  if (step === 1) {
    const boxW = Math.max(blockW, 150);
    label(`x ${labels[i]}`, y, true);
    items.push({
      type: 'rect',
      x: x0,
      y,
      w: boxW,
      h: cellH,
      fill: theme.faint,
      stroke: theme.muted,
      strokeWidth: 1,
      rx: 2,
    });
    items.push({
      type: 'text',
      x: x0 + boxW / 2,
      y: y + cellH / 2,
      text: `input: ${nEmbd} numbers`,
      size: 10,
      fill: theme.fg,
      anchor: 'middle',
    });
    y += rowH + 4;
    items.push({
      type: 'text',
      x: x0,
      y: y + 6,
      text: `↓ × W_Q of this head (${nEmbd} × ${HS})`,
      size: 11,
      fill: theme.fg,
    });
    y += 22;
    label(`q ${labels[i]}`, y, true);
    const qMax = maxAbs(qRow);
    tipCells(
      qRow,
      HS,
      x0,
      y,
      cellW,
      cellH,
      qMax,
      (d) => `q[${d}] of ${quoteToken(tokens[i].text)} = ${signed(qRow[d], 4)}`,
    );
    cursor = { x: x0, y, n: HS, w: cellW, tip: (d) => `q[${d}] = ${signed(qRow[d], 4)}` };
    y += rowH + 6;
    y = legend(y, qMax, 'query numbers');
  } else if (step === 2 || step === 3) {
    label(`q ${labels[i]}`, y, true);
    tipCells(qRow, HS, x0, y, cellW, cellH, qkMax, (d) => `q[${d}] = ${signed(qRow[d], 4)}`);
    if (step === 2) cursor = null;
    y += rowH;
    if (step === 3) {
      // the products for the picked key, their sum, and the scaling
      const { products, dot } = dotProducts(inside, i, k0);
      const kRow = rowOf(inside.k, k0, HS);
      const pMax = maxAbs(products);
      label(`q × k ${labels[k0]}`, y, true);
      tipCells(
        products,
        HS,
        x0,
        y,
        cellW,
        cellH,
        pMax,
        (d) => `q[${d}] × k[${d}] = ${signed(qRow[d])} × ${signed(kRow[d])} = ${signed(products[d], 4)}`,
      );
      cursor = {
        x: x0,
        y,
        n: HS,
        w: cellW,
        tip: (d) =>
          `q[${d}] × k[${d}] of ${quoteToken(tokens[k0].text)} = ${signed(qRow[d])} × ${signed(kRow[d])} = ${signed(products[d], 4)}`,
      };
      y += rowH;
      items.push({
        type: 'text',
        x: x0,
        y: y + 5,
        text: `sum q · k = ${signed(dot, 2)}, ÷ √${HS} = ${signed(inside.scores[i * T + k0])}`,
        size: 11,
        fill: theme.fg,
        weight: 'bold',
      });
      y += 22;
      y = header(y, [
        [x0, 'keys k'],
        ...(narrow ? [] : [[x0 + blockW + 56, 'q · k', 'end']]),
        [x0 + blockW + scoreX, `÷ √${HS}`, 'end'],
      ]);
    } else {
      y += 4;
      y = header(y, [[x0, 'keys k (point at one to pick it)']]);
    }
    for (const j of keys) {
      rowBand(j, y);
      rows.set(j, y);
      label(labels[j], y, j === k0);
      const kRow = rowOf(inside.k, j, HS);
      tipCells(
        kRow,
        HS,
        x0,
        y,
        cellW,
        cellH,
        qkMax,
        (d) => `k[${d}] of ${quoteToken(tokens[j].text)} = ${signed(kRow[d], 4)}`,
      );
      if (step === 2 && j === k0)
        cursor = {
          x: x0,
          y,
          n: HS,
          w: cellW,
          tip: (d) => `k[${d}] of ${quoteToken(tokens[j].text)} = ${signed(kRow[d], 4)}`,
        };
      if (step === 3) {
        const s = inside.scores[i * T + j];
        if (!narrow)
          items.push({
            type: 'text',
            x: x0 + blockW + 56,
            y: y + cellH / 2,
            text: signed(s * Math.sqrt(HS), 2),
            size: 11,
            fill: theme.muted,
            anchor: 'end',
          });
        items.push({
          type: 'text',
          x: x0 + blockW + scoreX,
          y: y + cellH / 2,
          text: signed(s),
          size: 11,
          fill: theme.fg,
          anchor: 'end',
          weight: j === k0 ? 'bold' : undefined,
          data: { key: j, score: s },
        });
      }
      y += rowH;
    }
    y = hiddenNote(y);
    y = laterNote(y);
    y = legend(y + 6, qkMax, 'query and key numbers');
  } else if (step === 4) {
    // scores -> softmax -> weights: bars, the numbers, and the heatmap's row
    y = header(y, [
      [x0 + 44, 'score', 'end'],
      [x0 + 68, 'softmax → weight'],
    ]);
    for (const j of keys) {
      rowBand(j, y);
      rows.set(j, y);
      label(labels[j], y, j === k0);
      const s = inside.scores[i * T + j];
      const w = inside.attention[i * T + j];
      items.push({
        type: 'text',
        x: x0 + 44,
        y: y + cellH / 2,
        text: signed(s),
        size: 11,
        fill: theme.muted,
        anchor: 'end',
        data: { key: j, score: s },
      });
      items.push({ type: 'text', x: x0 + 52, y: y + cellH / 2, text: '→', size: 11, fill: theme.muted });
      items.push({ type: 'rect', x: x0 + 68, y, w: barW, h: cellH, fill: theme.faint, rx: 2 });
      items.push({
        type: 'rect',
        x: x0 + 68,
        y,
        w: Math.max(1, barW * w),
        h: cellH,
        fill: heat(theme, Math.max(0.06, w)),
        rx: 2,
        data: { tip: `weight on ${quoteToken(tokens[j].text)} = ${f4(w)} (score ${signed(s)})` },
      });
      items.push({
        type: 'text',
        x: x0 + 74 + barW,
        y: y + cellH / 2,
        text: f4(w),
        size: 11,
        fill: theme.fg,
        weight: j === k0 ? 'bold' : undefined,
        data: { key: j, weight: w },
      });
      y += rowH;
    }
    y = hiddenNote(y);
    y = laterNote(y);
    // row i of the heatmap, in its colours: every key, masked ones faint
    y += 6;
    const c = stripW / T;
    label(`row ${i}`, y, false, theme.muted);
    items.push({ type: 'rect', x: x0, y, w: stripW, h: cellH, fill: theme.faint });
    for (let j = 0; j <= i; j++)
      items.push({
        type: 'rect',
        x: x0 + j * c,
        y,
        w: c + (c > 2 ? -0.5 : 0.2),
        h: cellH,
        fill: heat(theme, inside.attention[i * T + j]),
        data: { tip: `${quoteToken(tokens[j].text)}: ${f4(inside.attention[i * T + j])}` },
      });
    y += cellH + 4;
    for (const line of wrap(
      "the same weights in the heatmap's colours (√ scale); later tokens get 0",
      9,
      sceneW - x0 - 8,
    )) {
      items.push({ type: 'text', x: x0, y: y + 5, text: line, size: 9, fill: theme.muted });
      y += 12;
    }
    y += 6;
  } else if (step === 5) {
    // weight × value, per key; their sum is z
    const scaled = keys.map((j) => rowOf(inside.v, j, HS).map((x) => x * inside.attention[i * T + j]));
    const zRow = rowOf(inside.z, i, HS);
    const vMax = maxAbs(zRow, ...scaled);
    y = header(y, [
      [x0, 'weight × value v'],
      [x0 + blockW + 8, '‖v W_O‖'],
    ]);
    keys.forEach((j, r) => {
      rowBand(j, y);
      rows.set(j, y);
      const w = inside.attention[i * T + j];
      label(`${f2(w)} × ${labels[j]}`, y, j === k0);
      const vRow = rowOf(inside.v, j, HS);
      tipCells(
        scaled[r],
        HS,
        x0,
        y,
        cellW,
        cellH,
        vMax,
        (d) =>
          `${f4(w)} × v[${d}] of ${quoteToken(tokens[j].text)} = ${f4(w)} × ${signed(vRow[d])} = ${signed(scaled[r][d], 4)}`,
      );
      if (j === k0)
        cursor = {
          x: x0,
          y,
          n: HS,
          w: cellW,
          tip: (d) => `${f4(w)} × v[${d}] of ${quoteToken(tokens[j].text)} = ${signed(scaled[r][d], 4)}`,
        };
      items.push({
        type: 'text',
        x: x0 + blockW + 8,
        y: y + cellH / 2,
        text: inside.valueNorm[j].toFixed(2),
        size: 11,
        fill: theme.muted,
        data: { key: j, valueNorm: inside.valueNorm[j] },
      });
      y += rowH;
    });
    y = hiddenNote(y);
    items.push({ type: 'line', x1: x0, y1: y, x2: x0 + blockW, y2: y, stroke: theme.fg, width: 1 });
    y += 6;
    label(`z = Σ ${labels[i]}`, y, true);
    tipCells(zRow, HS, x0, y, cellW, cellH, vMax, (d) => `z[${d}] = ${signed(zRow[d], 4)}`);
    if (hidden)
      items.push({
        type: 'text',
        x: x0 + blockW + 8,
        y: y + cellH / 2,
        text: `(all ${i + 1} tokens)`,
        size: 10,
        fill: theme.muted,
      });
    y += rowH + 6;
    y = legend(y, vMax, 'value numbers');
  } else {
    // z × W_O^h: the head's write, nEmbd numbers in rows
    const zRow = rowOf(inside.z, i, HS);
    label(`z ${labels[i]}`, y, true);
    tipCells(zRow, HS, x0, y, cellW, cellH, maxAbs(zRow), (d) => `z[${d}] = ${signed(zRow[d], 4)}`);
    y += rowH + 4;
    items.push({
      type: 'text',
      x: x0,
      y: y + 6,
      text: `↓ × this head's rows of W_O (${HS} × ${nEmbd})`,
      size: 11,
      fill: theme.fg,
    });
    y += 22;
    const out = rowOf(inside.out, i, nEmbd);
    const oMax = maxAbs(out);
    // in rows of d_head numbers, as wide as z above (the rows are only a way to fold the vector)
    const oc = cellW;
    const perRow = HS;
    const ocH = clamp(Math.round(cellH * 0.7), 6, 11);
    label('write', y, true);
    for (let c = 0; c < nEmbd; c++) {
      const r = Math.floor(c / perRow);
      items.push({
        type: 'rect',
        x: x0 + (c % perRow) * oc,
        y: y + r * (ocH + 1),
        w: Math.max(1, oc - (oc >= 5 ? 1 : 0)),
        h: ocH,
        fill: signedColour(theme, out[c], oMax),
        data: { tip: `write[${c}] = ${signed(out[c], 4)}` },
      });
    }
    cursor = { x: x0, y, n: nEmbd, w: oc, perRow, h: ocH + 1, tip: (c) => `write[${c}] = ${signed(out[c], 4)}` };
    y += Math.ceil(nEmbd / perRow) * (ocH + 1) + 8;
    for (const line of wrap(
      `size ‖z W_O‖ = ${writeNorm(inside, i).toFixed(2)}: this head's bar in "How the heads combine" (${nEmbd} numbers in rows of ${HS})`,
      11,
      sceneW - x0 - 8,
    )) {
      items.push({ type: 'text', x: x0, y: y + 6, text: line, size: 11, fill: theme.fg });
      y += 16;
    }
    y += 6;
    y = legend(y, oMax, 'numbers written');
  }
  return {
    scene: { width: sceneW, height: y + 6, background: theme.bg, font: theme.font, items },
    layout: { i, key: k0, keys, hidden, rows, rowH, cellW, cellH, x0, cursor, step },
  };
}

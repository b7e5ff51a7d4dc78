// The heads a page shows of a result without maps (run(text, { attention: 'thumbnails' }): a long
// text, whose every full map would not fit). The rule, one for every view of such a result: no view
// holds a head's whole map. The grid draws the thumbnails; the heatmap draws tiles of what it shows
// (result.tiles, below: model.attentionTile pooled to its bitmap, views/heatmap-bitmap.js, or the
// same cut from the rows held, tileFromPulled); the views
// that read a head's rows (the lines view, the token strip, the sentences about a head, the heatmap's
// tooltip) read the rows of the lines view's window around the focused token (pulledWindow: 128 rows,
// every column; askedWindow's 160 are asked for), pulled from the engine here and attached to the
// result as `result.pulled` (result.js's headSource). A result that begins with the same tokens as the last one (typing at the
// end) pulls only its new rows, and those come with the run itself (run()'s `pull` option, from
// request()), not in a second call that would wait behind the next run. At 8,000 tokens a head's
// rows are at most 5 MB where its map was 256 MB.
import { sharedPrefixLength, windowAround } from '../../lib/result.js';
import { roomyStride } from '../../lib/reuse.js';
import { LINES_WINDOW } from '../views/lines.js';

// heads kept pulled beyond the ones asked for (a reader going back and forth between a few heads)
const SPARE_HEADS = 8;
// and at most this many floats of them (256 MB)
export const SPARE_FLOATS = 1 << 26;

// The rows asked for are a few more than the views read: a keystroke that merges the last tokens
// (the text one token shorter) moves the window back a row, which the rows held then still cover, so
// that the run's new rows complete it and no second call is needed
const SLACK_ROWS = 32;

const around = (T, focus) => (Number.isInteger(focus) && focus >= 0 && focus < T ? focus : T - 1);

/** The rows [from, to) the views read of a head of a T-token result focused on token `focus` (null: the last). */
export function pulledWindow(T, focus) {
  return windowAround(T, around(T, focus), LINES_WINDOW);
}

/** The rows [from, to) a page asks for (within them it holds at least pulledWindow's): SLACK_ROWS more. */
export function askedWindow(T, focus) {
  return windowAround(T, around(T, focus), LINES_WINDOW + SLACK_ROWS);
}

/**
 * The tile of head (layer, head) that model.attentionTile(result.text, layer, head, { rows, columns,
 * bin }) returns, cut from the rows `result` holds of it (result.pulled: every column of a window of
 * rows, which lib/maps.js's pulledRowsOf takes from the engine's attentionTile at bin 1), each cell
 * the largest weight of its bin x bin block as the engine pools them (a maximum of the same floats:
 * the same values, bit for bit). Typing at the end of a long text then paints the heatmap's new block
 * rows in the frame that shows the run, not after a second call to the engine, which took 10-15 ms
 * and a frame of its own (GPT-2 small's shape at 1,000 tokens). Null when some of the rows asked for
 * are not held, or the ranges are not ones attentionTile takes.
 */
export function tileFromPulled(result, layer, head, { rows, columns, bin = 1 } = {}) {
  const m = result.pulled?.get(layer * result.nHead + head);
  const { T } = result;
  const [r0, r1] = rows ?? [0, T];
  const [c0, c1] = columns ?? [0, T];
  const whole = (v) => Number.isInteger(v) && v >= 0;
  if (!m || ![r0, r1, c0, c1].every(whole) || !Number.isInteger(bin) || bin < 1 || bin > T) return null;
  if (r0 >= r1 || c0 >= c1 || r0 < m.rows[0] || r1 > m.rows[1] || c1 > T) return null;
  const nRows = Math.ceil((r1 - r0) / bin),
    nCols = Math.ceil((c1 - c0) / bin);
  const values = new Float32Array(nRows * nCols);
  for (let q = r0; q < r1; q++) {
    const row = m.data.subarray((q - m.rows[0]) * m.stride, (q - m.rows[0]) * m.stride + T);
    const out = Math.floor((q - r0) / bin) * nCols;
    for (let x = 0; x < nCols; x++) {
      const k1 = Math.min(c1, c0 + (x + 1) * bin);
      let v = values[out + x];
      for (let k = c0 + x * bin; k < k1; k++) if (row[k] > v) v = row[k];
      values[out + x] = v;
    }
  }
  return {
    text: result.text,
    ablate: result.ablate ?? [],
    T,
    layer,
    head,
    rows: [r0, r1],
    columns: [c0, c1],
    bin,
    nRows,
    nCols,
    values,
  };
}

export class PulledMaps {
  #entries = new Map(); // 'layer:head' -> { ids, ablate, data, stride, rows }, most recent last
  #generation = 0; // clear()s so far: a pull that was waiting on the engine meanwhile keeps nothing

  /**
   * `getModel()`: the model the results are of (the page's worker client). `spareFloats`: the most
   * floats kept in heads not shown (default SPARE_FLOATS). `focus()`: the token the views focus on
   * (the page's state.token: null or past the text for the last), whose window of rows is pulled.
   */
  constructor(getModel, { spareFloats = SPARE_FLOATS, focus = () => null } = {}) {
    this.getModel = getModel;
    this.spareFloats = spareFloats;
    this.focus = focus;
    /** Rows pulled so far (the tests and the bench read it). */
    this.rowsPulled = 0;
  }

  /** The heads of `heads` ([[layer, head], ...]) whose rows of the focused window `result` does not hold yet. */
  missing(result, heads) {
    if (result.attentionAll) return [];
    this.#attachTiles(result);
    const [from, to] = pulledWindow(result.T, this.focus());
    return heads.filter(([l, h]) => {
      const m = result.pulled?.get(l * result.nHead + h);
      return !m || m.rows[0] > from || m.rows[1] < to;
    });
  }

  /**
   * run()'s `pull` option for a run that will show `heads` with `ablate` switched off: the heads
   * whose rows are of the same tokens (the last ones pulled together), with those tokens, so that the
   * run returns only the rows of the focused window after them; a head never pulled comes as its
   * window. Null when no head can come with the run.
   */
  request(heads, ablate) {
    const key = JSON.stringify(ablate ?? []);
    const window = { around: this.focus() ?? null, size: LINES_WINDOW + SLACK_ROWS };
    let ids = null;
    const asked = [];
    for (const [l, h] of heads) {
      const e = this.#entries.get(`${l}:${h}`);
      if (!e) continue;
      if (e.ablate !== key || (ids && e.ids !== ids)) continue;
      ids = e.ids;
      asked.push([l, h]);
    }
    if (!asked.length && heads.length) return { heads: [heads[0]], ids: new Int32Array(0), window };
    return asked.length ? { heads: asked, ids, window } : null;
  }

  /**
   * Takes the rows a run brought (its pulledHeads, pulledFrom, pulledTo, pulledRows) into the
   * windows, and attaches them to it; a head whose earlier rows of the window are not held (another
   * focus, other tokens) is left out, for pull().
   */
  absorb(result) {
    if (result.attentionAll) return;
    this.#attachTiles(result);
    if (!result.pulledRows) return;
    const { T, pulledFrom: from, pulledRows: rows } = result;
    const to = result.pulledTo ?? T;
    const ids = Int32Array.from(result.tokens, (t) => t.id);
    const ablate = JSON.stringify(result.ablate ?? []);
    const window = askedWindow(T, this.focus());
    const need = pulledWindow(T, this.focus())[0];
    if (window[0] > from || window[1] !== to) return; // not this window's rows: pulled apart
    const block = (to - from) * T;
    result.pulledHeads.forEach(([layer, head], i) => {
      const key = `${layer}:${head}`;
      const e = this.#window(this.#entries.get(key), ids, ablate, window, T, from, need);
      if (!e) return; // rows before `from` the views read that are not held: pulled apart
      for (let r = from; r < to; r++)
        e.data.set(
          rows.subarray(i * block + (r - from) * T, i * block + (r - from + 1) * T),
          (r - e.rows[0]) * e.stride,
        );
      this.rowsPulled += to - from;
      this.#keep(key, e, ids, ablate);
      this.#attach(result, layer, head, e);
    });
  }

  // A new entry for rows [start, window[1]) of a result with token `ids`, whose rows from `from` on
  // are to come, holding the rows before `from` it can take from `old` (same switched-off heads, same
  // tokens up to each row: row q depends on tokens 0..q): from window[0], or from the first row old
  // holds; null when that is after row `need` (the first the views read).
  #window(old, ids, ablate, window, T, from, need) {
    const [w0, w1] = window;
    const keepTo = Math.min(from, w1);
    let start = w0;
    if (keepTo > w0) {
      const shared = old && old.ablate === ablate ? sharedPrefixLength(old.ids, ids) : 0;
      const usable = old && shared >= keepTo && old.rows[1] >= keepTo;
      start = usable ? Math.max(w0, Math.min(old.rows[0], keepTo)) : keepTo;
    }
    if (start > need) return null;
    const stride = old && old.stride >= T ? old.stride : roomyStride(T, this.getModel().info.config.nPositions);
    const e = { data: new Float32Array((w1 - start) * stride), stride, rows: [start, w1] };
    for (let r = start; r < keepTo; r++) {
      const at = (r - old.rows[0]) * old.stride;
      e.data.set(old.data.subarray(at, at + Math.min(stride, old.stride)), (r - start) * stride);
    }
    return e;
  }

  #keep(key, e, ids, ablate) {
    e.ids = ids;
    e.ablate = ablate;
    this.#entries.delete(key);
    this.#entries.set(key, e);
  }

  #attach(result, layer, head, e) {
    (result.pulled ??= new Map()).set(layer * result.nHead + head, { data: e.data, stride: e.stride, rows: e.rows });
  }

  // The heatmap's tiles of `result` (views/heatmap-bitmap.js): cut from the rows the result holds
  // when it holds them all (tileFromPulled: a typed token's new block rows came with its run), else
  // model.attentionTile of its text and switched-off heads, through the model the result is of
  #attachTiles(result) {
    if (result.tiles) return;
    const model = this.getModel();
    result.tiles = (layer, head, options) => {
      const held = tileFromPulled(result, layer, head, options);
      return held
        ? Promise.resolve(held)
        : model.attentionTile(result.text, layer, head, { ...options, ablate: result.ablate ?? [] });
    };
  }

  /** The heads held, most recently pulled last ('layer:head'). */
  held() {
    return [...this.#entries.keys()];
  }

  /** Forgets every pulled map (another model). */
  clear() {
    this.#entries.clear();
    this.#generation++;
  }

  /**
   * Pulls `heads` for `result`: the rows of the focused window it does not share with the last rows
   * pulled of that head (same tokens before, same heads switched off), then attaches every one as
   * result.pulled.
   */
  async pull(result, heads) {
    const model = this.getModel();
    const generation = this.#generation;
    this.#attachTiles(result);
    const { T } = result;
    const ids = Int32Array.from(result.tokens, (t) => t.id);
    const ablate = JSON.stringify(result.ablate ?? []);
    const window = askedWindow(T, this.focus());
    const need = pulledWindow(T, this.focus())[0];
    for (const [layer, head] of heads) {
      const key = `${layer}:${head}`;
      const old = this.#entries.get(key);
      // the rows from the first token that differs from the old window's on, when it holds those
      // the views read before them; else the whole window
      let from =
        old && old.ablate === ablate
          ? Math.max(window[0], Math.min(window[1], sharedPrefixLength(old.ids, ids)))
          : window[0];
      let e = this.#window(old, ids, ablate, window, T, from, need);
      if (!e) {
        from = window[0];
        e = this.#window(null, ids, ablate, window, T, from, need);
      }
      if (from < window[1]) {
        const tile = await model.attentionTile(result.text, layer, head, {
          rows: [from, window[1]],
          ablate: result.ablate,
        });
        // another model came meanwhile (clear()): these rows are the old one's, which the next
        // result's rows must not be built on, nor its heatmap's tiles cut from
        if (this.#generation !== generation) return;
        if (tile.T !== T) throw new Error(`the engine ran ${tile.T} tokens of a result of ${T}`);
        for (let r = from; r < window[1]; r++)
          e.data.set(tile.values.subarray((r - from) * T, (r - from + 1) * T), (r - e.rows[0]) * e.stride);
        this.rowsPulled += window[1] - from;
      }
      this.#keep(key, e, ids, ablate);
      this.#attach(result, layer, head, e);
    }
    // the least recently pulled beyond the spares go: at most SPARE_HEADS of them, holding at most
    // SPARE_FLOATS
    const wanted = new Set(heads.map(([l, h]) => `${l}:${h}`));
    let spare = 0;
    for (const [key, e] of this.#entries) if (!wanted.has(key)) spare += e.data.length;
    for (const [key, e] of this.#entries) {
      if (wanted.has(key)) continue;
      if (this.#entries.size <= wanted.size + SPARE_HEADS && spare <= this.spareFloats) break;
      this.#entries.delete(key);
      spare -= e.data.length;
    }
  }
}

// The heads a page shows of a result without maps (run(text, { attention: 'thumbnails' }): a long
// text, whose every full map would not fit). The grid draws the thumbnails; the views that show one
// head's weights (the heatmap, the lines view, the token strip, the explanations) read the heads
// they show from maps pulled from the engine here (model.attentionTile: recomputed from its key
// cache, the same floats as a full run's), attached to the result as `result.pulled` (result.js's
// headSource). They are kept across results: a result that begins with the same tokens as the last
// one (typing at the end) pulls only its new rows, and those come with the run itself (run()'s
// `pull` option, from request()), not in a second call that would wait behind the next run.
import { sharedPrefixLength, roomyStride } from '../../lib/result.js';

// heads kept pulled beyond the ones asked for (a reader going back and forth between a few heads)
const SPARE_HEADS = 8;
// and at most this many floats of them (256 MB)
export const SPARE_FLOATS = 1 << 26;

export class PulledMaps {
  #entries = new Map(); // 'layer:head' -> { ids, ablate, data, stride }, most recent last

  /**
   * `getModel()`: the model the results are of (the page's worker client). `spareFloats`: the most
   * floats kept in heads not shown (default SPARE_FLOATS).
   */
  constructor(getModel, { spareFloats = SPARE_FLOATS } = {}) {
    this.getModel = getModel;
    this.spareFloats = spareFloats;
    /** Rows pulled so far (the tests and the bench read it). */
    this.rowsPulled = 0;
  }

  /** The heads of `heads` ([[layer, head], ...]) that `result` holds no weights of yet. */
  missing(result, heads) {
    if (result.attentionAll) return [];
    return heads.filter(([l, h]) => !result.pulled?.has(l * result.nHead + h));
  }

  /**
   * run()'s `pull` option for a run that will show `heads` with `ablate` switched off: the heads
   * whose maps hold rows of the same tokens (the last ones pulled together), with those tokens, so
   * that the run returns only the rows after them; a head never pulled comes whole. Null when no
   * head can come with the run.
   */
  request(heads, ablate) {
    const key = JSON.stringify(ablate ?? []);
    let ids = null;
    const asked = [];
    for (const [l, h] of heads) {
      const e = this.#entries.get(`${l}:${h}`);
      if (!e) continue;
      if (e.ablate !== key || (ids && e.ids !== ids)) continue;
      ids = e.ids;
      asked.push([l, h]);
    }
    if (!asked.length && heads.length) return { heads: [heads[0]], ids: new Int32Array(0) };
    return asked.length ? { heads: asked, ids } : null;
  }

  /** Takes the rows a run brought (its pulledHeads, pulledFrom, pulledRows) into the maps, and attaches them to it. */
  absorb(result) {
    if (!result.pulledRows || result.attentionAll) return;
    const { T, pulledFrom: from, pulledRows: rows } = result;
    const ids = Int32Array.from(result.tokens, (t) => t.id);
    const ablate = JSON.stringify(result.ablate ?? []);
    const nPositions = this.getModel().info.config.nPositions;
    const block = (T - from) * T;
    result.pulledHeads.forEach(([layer, head], i) => {
      const key = `${layer}:${head}`;
      let e = this.#entries.get(key);
      if (from > 0 && (!e || e.ablate !== ablate || T > e.stride)) return; // rows the maps cannot take: pulled apart
      if (!e || T > e.stride) {
        const stride = roomyStride(T, nPositions);
        e = { data: new Float32Array(stride * stride), stride };
      }
      for (let r = from; r < T; r++)
        e.data.set(rows.subarray(i * block + (r - from) * T, i * block + (r - from + 1) * T), r * e.stride);
      this.rowsPulled += T - from;
      this.#keep(key, e, ids, ablate);
      (result.pulled ??= new Map()).set(layer * result.nHead + head, { data: e.data, stride: e.stride });
    });
  }

  #keep(key, e, ids, ablate) {
    e.ids = ids;
    e.ablate = ablate;
    this.#entries.delete(key);
    this.#entries.set(key, e);
  }

  /** The heads held, most recently pulled last ('layer:head'). */
  held() {
    return [...this.#entries.keys()];
  }

  /** Forgets every pulled map (another model). */
  clear() {
    this.#entries.clear();
  }

  /**
   * Pulls `heads` for `result`: the rows it does not share with the last map pulled of that head
   * (same tokens before, same heads switched off), then attaches every one as result.pulled.
   */
  async pull(result, heads) {
    const model = this.getModel();
    const { T, nHead } = result;
    const ids = Int32Array.from(result.tokens, (t) => t.id);
    const ablate = JSON.stringify(result.ablate ?? []);
    const nPositions = model.info.config.nPositions;
    for (const [layer, head] of heads) {
      const lh = layer * nHead + head;
      const key = `${layer}:${head}`;
      let e = this.#entries.get(key);
      let from = e && e.ablate === ablate ? sharedPrefixLength(e.ids, ids) : 0;
      if (!e || T > e.stride) {
        const stride = roomyStride(T, nPositions); // room for typed tokens: no new buffer each keystroke
        e = { data: new Float32Array(stride * stride), stride };
        from = 0;
      }
      if (from < T) {
        const tile = await model.attentionTile(result.text, layer, head, { rows: [from, T], ablate: result.ablate });
        if (tile.T !== T) throw new Error(`the engine ran ${tile.T} tokens of a result of ${T}`);
        for (let r = from; r < T; r++)
          e.data.set(tile.values.subarray((r - from) * T, (r - from + 1) * T), r * e.stride);
        this.rowsPulled += T - from;
      }
      this.#keep(key, e, ids, ablate);
      (result.pulled ??= new Map()).set(lh, { data: e.data, stride: e.stride });
    }
    // the least recently pulled beyond the spares go: at most SPARE_HEADS of them, holding at most
    // SPARE_FLOATS (a map of 8,192 tokens is 268 MB: none is kept spare there)
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

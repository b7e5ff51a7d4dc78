// HeadscopeModel.attentionTile() and attentionThumbnails(): the parts of the attention maps a view
// draws, pulled from the engine instead of every full map (Model::attention_tile and
// Model::attention_thumbnails in cpp/include/headscope/model.hpp, where the pooling is defined: each
// cell the largest weight of its bin x bin block). Published as maps.js; the Worker's host calls them
// as the page thread does.
import { checked } from './wasm.js';
import { flatAblate, sharedPrefixLength, windowAround, THUMBNAIL_SIZE } from './result.js';

const whole = (name, v, min = 0) => {
  if (!Number.isInteger(v) || v < min)
    throw new Error(`${name} must be a whole number >= ${min}, got ${typeof v === 'number' ? v : typeof v}`);
};
const range = (name, r) => {
  if (!Array.isArray(r) || r.length !== 2) throw new Error(`${name} must be [begin, end]`);
  whole(`${name}[0]`, r[0]);
  whole(`${name}[1]`, r[1]);
  return r;
};
const checkText = (text) => {
  if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
};

/**
 * HeadscopeModel.attentionTile()'s work for the model handle `h`: runs `text` (with `ablate`'s heads
 * off; a run of the text the engine holds is free) and reads rows × columns of head (layer, head)'s
 * map in bin × bin cells. `model.run(text, flat)` runs the text as the model's run() does and
 * returns its token count.
 */
export function tileOf(core, h, text, layer, head, options, model) {
  checkText(text);
  whole('layer', layer);
  whole('head', head);
  const { ablate = [], bin = 1 } = options ?? {};
  whole('bin', bin, 1);
  const T = model.run(text, flatAblate(ablate));
  const [r0, r1] = range('rows', options?.rows ?? [0, T]);
  const [c0, c1] = range('columns', options?.columns ?? [0, T]);
  const t = checked(core, core.attentionTile(h, layer, head, r0, r1, c0, c1, bin));
  return {
    text,
    ablate: ablate.map(([l, hd]) => [l, hd]),
    T,
    layer,
    head,
    rows: [r0, r1],
    columns: [c0, c1],
    bin,
    nRows: t.rows,
    nCols: t.cols,
    values: t.values,
  };
}

// The thumbnails every run keeps in the engine (LoadOptions::thumbnail_size's default: result.js's
// THUMBNAIL_SIZE): asking for this size copies them, another size recomputes them.

/** A run's thumbnails as a result's fields (run(text, { attention: 'thumbnails' }); result.js's layout). */
export const thumbnailFields = (t) => ({ thumbnails: t.values, thumbnailBin: t.bin, thumbnailCells: t.n });

/**
 * The thumbnails of the run the engine holds (T tokens), as a result's fields. With `previous`
 * (reuseInfo() of an earlier thumbnails result) at the same bin, only each head's cell rows from the
 * first changed token's on, as thumbnailRows from thumbnailRowsFrom: typing at the end of a long text
 * copies out its last cell row (reuse.js's withPreviousThumbnails puts the others back).
 */
export function runThumbnailsOf(core, h, T, previous) {
  const bin = checked(core, core.attentionThumbnailBin(T, THUMBNAIL_SIZE));
  const from = previous?.thumbnailBin === bin ? Math.floor(sharedPrefixLength(previous.ids, h.tokenIds()) / bin) : 0;
  const t = checked(core, core.attentionThumbnails(h, THUMBNAIL_SIZE, from));
  if (from === 0) return thumbnailFields(t);
  return { thumbnailRows: t.values, thumbnailRowsFrom: from, thumbnailBin: t.bin, thumbnailCells: t.n };
}

/**
 * run()'s `pull` option ({ heads: [[layer, head], ...], ids, window? }): the rows of those heads' maps
 * from the first token where the run's token ids differ from `ids` (the tokens of the rows the caller
 * holds already), every column; with `window` ({ around, size }: windowAround(T, around, size),
 * `around` null or past the text for the last token) only the rows of that window. As a result's
 * fields pulledHeads, pulledFrom, pulledTo and pulledRows (heads x (pulledTo - pulledFrom) x T floats,
 * heads in the order asked; rows before pulledFrom in the window are the caller's, unchanged).
 */
export function pulledRowsOf(core, h, pull, ids) {
  if (!pull || !Array.isArray(pull.heads)) throw new Error('pull must be { heads: [[layer, head], ...], ids }');
  if (!(pull.ids instanceof Int32Array) && !Array.isArray(pull.ids))
    throw new Error('pull.ids must be an Int32Array or an array of token ids');
  const heads = pull.heads.map((pair) => {
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(Number.isInteger))
      throw new Error(`pull.heads entries must be [layer, head] pairs of integers, got ${JSON.stringify(pair)}`);
    return [pair[0], pair[1]];
  });
  const T = ids.length;
  let [w0, w1] = [0, T];
  if (pull.window != null) {
    const { around = null, size } = pull.window;
    whole('pull.window.size', size, 1);
    if (around !== null) whole('pull.window.around', around);
    [w0, w1] = windowAround(T, around === null || around >= T ? T - 1 : around, size);
  }
  const from = Math.min(w1, Math.max(w0, sharedPrefixLength(pull.ids, ids)));
  const block = (w1 - from) * T;
  const values = new Float32Array(heads.length * block);
  if (block > 0)
    heads.forEach(([layer, head], i) =>
      values.set(checked(core, core.attentionTile(h, layer, head, from, w1, 0, T, 1)).values, i * block),
    );
  return { pulledHeads: heads, pulledFrom: from, pulledTo: w1, pulledRows: values };
}

/** HeadscopeModel.attentionThumbnails()'s work: every head's map in at most size × size cells. */
export function thumbnailsOf(core, h, text, options, model) {
  checkText(text);
  const { ablate = [], size = THUMBNAIL_SIZE } = options ?? {};
  whole('size', size, 1);
  const T = model.run(text, flatAblate(ablate));
  const t = checked(core, core.attentionThumbnails(h, size, 0));
  return { text, ablate: ablate.map(([l, hd]) => [l, hd]), T, size, bin: t.bin, n: t.n, values: t.values };
}

/** The typed arrays of an attentionTile() or attentionThumbnails() value, for a transfer between threads. */
export const mapBuffers = (x) => [x.values.buffer];

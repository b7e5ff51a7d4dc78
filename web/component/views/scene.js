// A tiny display list ("scene") shared by every view: the same scene becomes live SVG DOM on the
// page, a standalone SVG file for export, and a canvas for PNG export. Text is always set with
// textContent / fillText, never parsed as markup, so token strings stay inert.
//
// Scene: { width, height, background, font, items: [...] } where an item is one of
//   { type: 'rect', x, y, w, h, fill, opacity?, stroke?, strokeWidth?, rx?, hit?, data? }
//   { type: 'line', x1, y1, x2, y2, stroke, width?, opacity?, dash?: [on, off, ...], data? }
//   { type: 'text', x, y, text, size?, fill, anchor?: 'start'|'middle'|'end', weight?, rotate?, halo? (an outline in this colour under the letters), data? }
// `hit: true` marks invisible pointer targets (kept in the DOM, left out of exports).
// `data` becomes data-* attributes, `attrs` extra attributes and `cls` the class of the DOM element
// (pointer and keyboard handling); none of them reach exported files.

export const SVG_NS = 'http://www.w3.org/2000/svg';
const ANCHOR_TO_CANVAS = { start: 'left', middle: 'center', end: 'right' };

const r2 = (v) => Math.round(v * 100) / 100;

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
}

const TAG = { rect: 'rect', line: 'line', text: 'text' };

/** The presentation attributes of an item (undefined values are left out). */
function itemAttrs(it, forExport) {
  if (it.type === 'rect') {
    return {
      x: r2(it.x),
      y: r2(it.y),
      width: r2(it.w),
      height: r2(it.h),
      rx: it.rx,
      fill: it.hit ? 'transparent' : it.fill,
      'fill-opacity': it.opacity !== undefined && it.opacity !== 1 ? r2(it.opacity) : undefined,
      stroke: it.stroke,
      'stroke-width': it.strokeWidth,
      'pointer-events': it.hit && !forExport ? 'all' : undefined,
    };
  }
  if (it.type === 'line') {
    return {
      x1: r2(it.x1),
      y1: r2(it.y1),
      x2: r2(it.x2),
      y2: r2(it.y2),
      stroke: it.stroke,
      'stroke-width': it.width ?? 1,
      'stroke-opacity': it.opacity !== undefined ? r2(it.opacity) : undefined,
      'stroke-linecap': 'round',
      'stroke-dasharray': it.dash?.length ? it.dash.join(' ') : undefined,
    };
  }
  if (it.type === 'text') {
    return {
      x: r2(it.x),
      y: r2(it.y),
      fill: it.fill,
      'font-size': it.size ?? 12,
      'text-anchor': it.anchor ?? 'start',
      'dominant-baseline': 'central',
      'font-weight': it.weight,
      transform: it.rotate ? `rotate(${it.rotate} ${r2(it.x)} ${r2(it.y)})` : undefined,
      // halo: an outline in the background's colour under the letters, so a label stays legible
      // where it crosses bands and lines
      stroke: it.halo,
      'stroke-width': it.halo ? 3 : undefined,
      'stroke-linejoin': it.halo ? 'round' : undefined,
      'paint-order': it.halo ? 'stroke' : undefined,
    };
  }
  throw new Error(`unknown scene item ${it.type}`);
}

function itemToSvg(doc, it, forExport) {
  const el = doc.createElementNS(SVG_NS, TAG[it.type] ?? 'unknown');
  setAttrs(el, itemAttrs(it, forExport));
  if (it.type === 'text') el.textContent = it.text; // text node: user data is never parsed as markup
  if (!forExport) {
    if (it.data) for (const [k, v] of Object.entries(it.data)) el.dataset[k] = String(v);
    if (it.attrs) setAttrs(el, it.attrs); // DOM-only attributes (tabindex, role, aria-label)
    if (it.cls) el.setAttribute('class', it.cls);
  }
  return el;
}

// ---- live SVG, updated in place ---------------------------------------------------------------
// A page that shows a new scene for every keystroke would otherwise rebuild hundreds of SVG nodes
// each time (and the browser would restyle, lay out and repaint all of them). LiveSvg keeps one
// element per scene item and, on update, only writes the attributes and texts that changed; items
// are matched by position, so scenes built by the same function line up.

const EMPTY = Object.freeze({});

/** Writes `next` over `prev` (both attribute maps of one element): changed and removed only. */
function patchAttrs(el, prev, next) {
  for (const k in next) {
    const v = next[k];
    if (v === undefined || v === null) continue;
    const s = String(v);
    if (prev[k] === undefined || String(prev[k]) !== s) el.setAttribute(k, s);
  }
  for (const k in prev) {
    if (prev[k] !== undefined && prev[k] !== null && (next[k] === undefined || next[k] === null)) el.removeAttribute(k);
  }
}

/** An <svg> element showing one scene after another, reusing its elements. */
export class LiveSvg {
  constructor(doc = document) {
    this.doc = doc;
    this.svg = doc.createElementNS(SVG_NS, 'svg');
    this.svg.setAttribute('xmlns', SVG_NS);
    this.titleEl = doc.createElementNS(SVG_NS, 'title');
    this.svg.appendChild(this.titleEl);
    this.bg = doc.createElementNS(SVG_NS, 'rect');
    this.bg.setAttribute('x', '0');
    this.bg.setAttribute('y', '0');
    this.svg.appendChild(this.bg);
    this.rootAttrs = EMPTY;
    this.bgAttrs = EMPTY;
    this.title = '';
    this.els = []; // one element per item, in order, right after the background
    this.state = []; // per element: { type, attrs, text, data, cls }
  }

  /** Shows `scene`; `title` becomes the SVG's <title> (its accessible name). */
  update(scene, title = '') {
    const { doc, svg } = this;
    const rootAttrs = {
      viewBox: `0 0 ${r2(scene.width)} ${r2(scene.height)}`,
      width: r2(scene.width),
      height: r2(scene.height),
      'font-family': scene.font ?? 'system-ui, sans-serif',
    };
    patchAttrs(svg, this.rootAttrs, rootAttrs);
    this.rootAttrs = rootAttrs;
    if (title !== this.title) {
      this.titleEl.textContent = title;
      this.title = title;
    }
    const bgAttrs = scene.background
      ? { width: r2(scene.width), height: r2(scene.height), fill: scene.background }
      : { width: 0, height: 0, fill: 'none' };
    patchAttrs(this.bg, this.bgAttrs, bgAttrs);
    this.bgAttrs = bgAttrs;
    const items = scene.items;
    const n = items.length;
    let i = 0;
    for (; i < n; i++) {
      const it = items[i];
      const el = this.els[i];
      const st = this.state[i];
      if (!el || st.type !== it.type) {
        // a new element (or a different kind at this position): build it and keep going
        const fresh = itemToSvg(doc, it, false);
        const ref = el ?? (i > 0 ? this.els[i - 1].nextSibling : this.bg.nextSibling);
        if (el) el.replaceWith(fresh);
        else svg.insertBefore(fresh, ref);
        this.els[i] = fresh;
        this.state[i] = {
          type: it.type,
          attrs: itemAttrs(it, false),
          text: it.text,
          data: it.data ?? EMPTY,
          cls: it.cls,
          extra: it.attrs ?? EMPTY,
        };
        continue;
      }
      const attrs = itemAttrs(it, false);
      patchAttrs(el, st.attrs, attrs);
      st.attrs = attrs;
      if (it.type === 'text' && it.text !== st.text) {
        el.textContent = it.text;
        st.text = it.text;
      }
      const data = it.data ?? EMPTY;
      if (data !== st.data) {
        for (const k in data)
          if (st.data[k] === undefined || String(st.data[k]) !== String(data[k])) el.dataset[k] = String(data[k]);
        for (const k in st.data) if (data[k] === undefined) delete el.dataset[k];
        st.data = data;
      }
      // DOM-only attributes (tabindex, role, aria-label) may also be changed by the views (keyboard
      // focus moves tabindex): compare them with the element itself
      const extra = it.attrs ?? EMPTY;
      for (const k in extra) {
        const v = extra[k];
        if (v === undefined || v === null) continue;
        const s = String(v);
        if (el.getAttribute(k) !== s) el.setAttribute(k, s);
      }
      for (const k in st.extra) if (extra[k] === undefined) el.removeAttribute(k);
      st.extra = extra;
      if (it.cls !== st.cls) {
        if (it.cls) el.setAttribute('class', it.cls);
        else el.removeAttribute('class');
        st.cls = it.cls;
      }
    }
    // fewer items than last time: drop the rest
    for (let j = n; j < this.els.length; j++) this.els[j].remove();
    this.els.length = n;
    this.state.length = n;
    return svg;
  }
}

/** Builds an <svg> element for the scene. */
export function sceneToSvg(scene, { doc = document, forExport = false, title } = {}) {
  const svg = doc.createElementNS(SVG_NS, 'svg');
  setAttrs(svg, {
    xmlns: SVG_NS,
    viewBox: `0 0 ${r2(scene.width)} ${r2(scene.height)}`,
    width: r2(scene.width),
    height: r2(scene.height),
    'font-family': scene.font ?? 'system-ui, sans-serif',
  });
  if (title) {
    const t = doc.createElementNS(SVG_NS, 'title');
    t.textContent = title;
    svg.appendChild(t);
  }
  if (scene.background) {
    svg.appendChild(
      itemToSvg(doc, { type: 'rect', x: 0, y: 0, w: scene.width, h: scene.height, fill: scene.background }, forExport),
    );
  }
  const frag = doc.createDocumentFragment();
  for (const it of scene.items) {
    if (forExport && it.hit) continue;
    frag.appendChild(itemToSvg(doc, it, forExport));
  }
  svg.appendChild(frag);
  return svg;
}

/** A standalone SVG document (string) for the scene. */
export function sceneToSvgString(scene, title) {
  const svg = sceneToSvg(scene, { forExport: true, title });
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
}

/** Draws the scene on a canvas 2D context (already scaled by the caller if needed). */
export function drawScene(ctx, scene) {
  const font = scene.font ?? 'system-ui, sans-serif';
  if (scene.background) {
    ctx.fillStyle = scene.background;
    ctx.fillRect(0, 0, scene.width, scene.height);
  }
  for (const it of scene.items) {
    if (it.hit) continue;
    ctx.save();
    if (it.type === 'rect') {
      ctx.globalAlpha = it.opacity ?? 1;
      if (it.fill && it.fill !== 'none') {
        ctx.fillStyle = it.fill;
        ctx.fillRect(it.x, it.y, it.w, it.h);
      }
      if (it.stroke) {
        ctx.globalAlpha = 1;
        ctx.strokeStyle = it.stroke;
        ctx.lineWidth = it.strokeWidth ?? 1;
        ctx.strokeRect(it.x, it.y, it.w, it.h);
      }
    } else if (it.type === 'line') {
      ctx.globalAlpha = it.opacity ?? 1;
      ctx.strokeStyle = it.stroke;
      ctx.lineWidth = it.width ?? 1;
      ctx.lineCap = 'round';
      if (it.dash?.length) ctx.setLineDash(it.dash);
      ctx.beginPath();
      ctx.moveTo(it.x1, it.y1);
      ctx.lineTo(it.x2, it.y2);
      ctx.stroke();
    } else if (it.type === 'text') {
      ctx.fillStyle = it.fill;
      ctx.font = `${it.weight ?? 'normal'} ${it.size ?? 12}px ${font}`;
      ctx.textAlign = ANCHOR_TO_CANVAS[it.anchor ?? 'start'];
      ctx.textBaseline = 'middle';
      ctx.translate(it.x, it.y);
      if (it.rotate) ctx.rotate((it.rotate * Math.PI) / 180);
      if (it.halo) {
        ctx.strokeStyle = it.halo;
        ctx.lineWidth = 3;
        ctx.lineJoin = 'round';
        ctx.strokeText(it.text, 0, 0);
      }
      ctx.fillText(it.text, 0, 0);
    }
    ctx.restore();
  }
}

/** Renders the scene to a PNG Blob at `scale` x its size. */
export function sceneToPngBlob(scene, scale = 2) {
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(scene.width * scale));
  canvas.height = Math.max(1, Math.round(scene.height * scale));
  const ctx = canvas.getContext('2d');
  ctx.scale(scale, scale);
  drawScene(ctx, scene);
  return new Promise((resolve, reject) => {
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png');
  });
}

/** Offers a Blob as a file download. */
export function downloadBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** Rough text width for layout (no DOM measuring, so scenes are deterministic). */
export function textWidth(text, size) {
  let w = 0;
  for (const ch of text)
    w += /[\u1100-\uffff]/.test(ch) ? 1.0 : /[ilj.,:;'|!·]/.test(ch) ? 0.32 : /[MWmw@]/.test(ch) ? 0.85 : 0.6;
  return w * size;
}

/** Greedy word wrap of scene text into lines at most `width` wide (by textWidth). */
export function wrap(text, size, width) {
  const lines = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (line && textWidth(next, size) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

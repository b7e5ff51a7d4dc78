// A tiny display list ("scene") shared by every view: the same scene becomes live SVG DOM on the
// page, a standalone SVG file for export, and a canvas for PNG export. Text is always set with
// textContent / fillText, never parsed as markup, so token strings stay inert.
//
// Scene: { width, height, background, font, items: [...] } where an item is one of
//   { type: 'rect', x, y, w, h, fill, opacity?, stroke?, strokeWidth?, rx?, hit?, data? }
//   { type: 'line', x1, y1, x2, y2, stroke, width?, opacity?, data? }
//   { type: 'text', x, y, text, size?, fill, anchor?: 'start'|'middle'|'end', weight?, rotate?, data? }
// `hit: true` marks invisible pointer targets (kept in the DOM, left out of exports).
// `data` becomes data-* attributes, `attrs` extra attributes and `cls` the class of the DOM element
// (pointer and keyboard handling); none of them reach exported files.

export const SVG_NS = 'http://www.w3.org/2000/svg';
const ANCHOR_TO_CANVAS = { start: 'left', middle: 'center', end: 'right' };

const r2 = (v) => Math.round(v * 100) / 100;

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
}

function itemToSvg(doc, it, forExport) {
  let el;
  if (it.type === 'rect') {
    el = doc.createElementNS(SVG_NS, 'rect');
    setAttrs(el, {
      x: r2(it.x), y: r2(it.y), width: r2(it.w), height: r2(it.h), rx: it.rx,
      fill: it.hit ? 'transparent' : it.fill,
      'fill-opacity': it.opacity !== undefined && it.opacity !== 1 ? r2(it.opacity) : undefined,
      stroke: it.stroke, 'stroke-width': it.strokeWidth,
    });
    if (it.hit && !forExport) el.setAttribute('pointer-events', 'all');
  } else if (it.type === 'line') {
    el = doc.createElementNS(SVG_NS, 'line');
    setAttrs(el, {
      x1: r2(it.x1), y1: r2(it.y1), x2: r2(it.x2), y2: r2(it.y2), stroke: it.stroke,
      'stroke-width': it.width ?? 1, 'stroke-opacity': it.opacity !== undefined ? r2(it.opacity) : undefined,
      'stroke-linecap': 'round',
    });
  } else if (it.type === 'text') {
    el = doc.createElementNS(SVG_NS, 'text');
    setAttrs(el, {
      x: r2(it.x), y: r2(it.y), fill: it.fill, 'font-size': it.size ?? 12,
      'text-anchor': it.anchor ?? 'start', 'dominant-baseline': 'central',
      'font-weight': it.weight,
      transform: it.rotate ? `rotate(${it.rotate} ${r2(it.x)} ${r2(it.y)})` : undefined,
    });
    el.textContent = it.text; // text node: user data is never parsed as markup
  } else {
    throw new Error(`unknown scene item ${it.type}`);
  }
  if (!forExport) {
    if (it.data) for (const [k, v] of Object.entries(it.data)) el.dataset[k] = String(v);
    if (it.attrs) setAttrs(el, it.attrs); // DOM-only attributes (tabindex, role, aria-label)
    if (it.cls) el.setAttribute('class', it.cls);
  }
  return el;
}

/** Builds an <svg> element for the scene. */
export function sceneToSvg(scene, { doc = document, forExport = false, title } = {}) {
  const svg = doc.createElementNS(SVG_NS, 'svg');
  setAttrs(svg, {
    xmlns: SVG_NS, viewBox: `0 0 ${r2(scene.width)} ${r2(scene.height)}`,
    width: r2(scene.width), height: r2(scene.height),
    'font-family': scene.font ?? 'system-ui, sans-serif',
  });
  if (title) {
    const t = doc.createElementNS(SVG_NS, 'title');
    t.textContent = title;
    svg.appendChild(t);
  }
  if (scene.background) {
    svg.appendChild(itemToSvg(doc, { type: 'rect', x: 0, y: 0, w: scene.width, h: scene.height, fill: scene.background }, forExport));
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
  for (const ch of text) w += /[\u1100-\uffff]/.test(ch) ? 1.0 : /[ilj.,:;'|!·]/.test(ch) ? 0.32 : /[MWmw@]/.test(ch) ? 0.85 : 0.6;
  return w * size;
}

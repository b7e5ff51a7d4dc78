// Colours and token labels shared by every view.
// Heatmaps use single-hue/perceptually ordered scales (readable with any colour vision):
// d3's Blues on light backgrounds, Inferno on dark ones. Several heads at once use the
// Okabe-Ito palette (designed to stay distinct for colour-blind readers).
import { interpolateBlues, interpolateInferno } from 'd3-scale-chromatic';

/**
 * The components' one light and dark palette: the --hs-* custom properties of both elements'
 * shadow roots (paletteCss()), and themeFrom()'s values where a property is unset. A page may set
 * the properties on the elements to restyle them.
 */
export const PALETTE = Object.freeze({
  light: Object.freeze({
    fg: '#1b1d22',
    bg: '#ffffff',
    muted: '#5b606b',
    faint: '#eef0f4',
    accent: '#d1006b',
    focus: '#0b62d6',
    bar: '#2f6db5',
  }),
  dark: Object.freeze({
    fg: '#e8e8ea',
    bg: '#16181d',
    muted: '#a0a4ad',
    faint: '#2a2d35',
    accent: '#ffd166',
    focus: '#7fb3ff',
    bar: '#6fa8ff',
  }),
});

const paletteDeclarations = (scheme) =>
  [
    `--hs-scheme: ${scheme};`,
    ...Object.entries(PALETTE[scheme]).map(([name, colour]) => `--hs-${name}: ${colour};`),
    `color-scheme: ${scheme};`,
  ].join(' ');

/**
 * The palette as the elements' shadow-root CSS: light by default, dark where the reader prefers it
 * (unless theme="light"), and with theme="dark". Comes before host.css, which uses the properties.
 * The demo site's build writes it for its pages too (web/demo/build.sh, demo-palette.css), with the
 * selectors of a page's root: { root: ':root', attribute: 'data-theme' }.
 */
export function paletteCss({ root = ':host', attribute = 'theme' } = {}) {
  const when = (test) => (root === ':host' ? `:host(${test})` : `${root}${test}`);
  return `${root} { ${paletteDeclarations('light')} }
@media (prefers-color-scheme: dark) { ${when(`:not([${attribute}="light"])`)} { ${paletteDeclarations('dark')} } }
${when(`[${attribute}="dark"]`)} { ${paletteDeclarations('dark')} }
`;
}

const OKABE_ITO = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#F0E442', '#000000'];
const OKABE_ITO_DARK = ['#56B4E9', '#E69F00', '#009E73', '#CC79A7', '#D55E00', '#0072B2', '#F0E442', '#FFFFFF'];

/** [r, g, b] of a CSS colour written rgb(...) / rgba(...) or #rrggbb; `fallback` for anything else. */
export function parseRgb(css, fallback = [128, 128, 128]) {
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
  if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
  const h = /^#([0-9a-f]{6})$/i.exec(String(css).trim());
  if (h) return [0, 2, 4].map((i) => parseInt(h[1].slice(i, i + 2), 16));
  return fallback;
}

// WCAG 2 relative luminance of an sRGB colour (0..255 channels)
function luminance(r, g, b) {
  const lin = (c) => {
    const v = c / 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** Black or white, whichever contrasts more with the colour (WCAG contrast ratio). */
export function inkOn(r, g, b) {
  const l = luminance(r, g, b);
  return 1.05 / (l + 0.05) >= (l + 0.05) / 0.05 ? '#fff' : '#000';
}

function makeLut(interp, lo = 0, hi = 1) {
  const lut = new Uint8ClampedArray(256 * 3);
  const css = new Array(256);
  const ink = new Array(256); // text colour on each entry
  for (let i = 0; i < 256; i++) {
    const c = interp(lo + ((hi - lo) * i) / 255);
    const [r, g, b] = parseRgb(c);
    lut[i * 3] = r;
    lut[i * 3 + 1] = g;
    lut[i * 3 + 2] = b;
    css[i] = `rgb(${r},${g},${b})`;
    ink[i] = inkOn(r, g, b);
  }
  return { lut, css, ink };
}

const LUTS = {
  light: makeLut(interpolateBlues, 0.02, 1),
  dark: makeLut(interpolateInferno, 0, 0.97),
};

/** Reads the theme of `el` (light or dark, from the CSS custom properties set by the page). */
export function readTheme(el) {
  const cs = getComputedStyle(el);
  return themeFrom((name) => cs.getPropertyValue(name));
}

/**
 * A theme from CSS custom property values: `property(name)` returns the value or '' when unset.
 * Pure, so scene builders run in Node: `themeFrom(() => '')` is the default light theme.
 */
export function themeFrom(property) {
  const v = (name, fallback) => (property(name) || '').trim() || fallback;
  const dark = v('--hs-scheme', 'light') === 'dark';
  const p = PALETTE[dark ? 'dark' : 'light'];
  return {
    dark,
    fg: v('--hs-fg', p.fg),
    bg: v('--hs-bg', p.bg),
    muted: v('--hs-muted', p.muted),
    faint: v('--hs-faint', p.faint),
    accent: v('--hs-accent', p.accent),
    font: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
    heads: dark ? OKABE_ITO_DARK : OKABE_ITO,
    lut: dark ? LUTS.dark : LUTS.light,
  };
}

/**
 * Colour scale position of an attention weight: the square root, so that the small weights of
 * diffuse heads stay visible (0.25 sits in the middle of the scale). Legends say so.
 */
export function heatIndex(w) {
  if (!(w > 0)) return 0; // 0, negative zero, NaN
  if (w >= 1) return 255;
  // (x + 0.5) | 0 rounds like Math.round for 0 <= x < 255.5, and is 4x faster in V8's pixel loops
  return (Math.sqrt(w) * 255 + 0.5) | 0;
}

/** CSS colour for an attention weight in [0, 1]. */
export function heat(theme, w) {
  return theme.lut.css[heatIndex(w)];
}

/** Text colour (black or white) that contrasts most with heat(theme, w). */
export function heatInk(theme, w) {
  return theme.lut.ink[heatIndex(w)];
}

/** Colour of the i-th head shown at once. */
export function headColour(theme, i) {
  return theme.heads[i % theme.heads.length];
}

// Signed numbers ("Inside this head", the logit split): blue for positive, orange for negative (the
// first two Okabe-Ito colours of the scheme), from the theme's faint colour at 0 to the full colour
// at the scale's largest size, in 33 steps.
const signedLuts = new Map();
function signedLut(theme) {
  const key = `${theme.dark}|${theme.faint}`;
  let lut = signedLuts.get(key);
  if (!lut) {
    const zero = parseRgb(theme.faint, [200, 200, 200]);
    lut = (theme.dark ? OKABE_ITO_DARK : OKABE_ITO).slice(0, 2).map((end) => {
      const e = parseRgb(end);
      return Array.from(
        { length: 33 },
        (_, s) => `rgb(${zero.map((z, c) => Math.round(z + ((e[c] - z) * s) / 32)).join(',')})`,
      );
    });
    signedLuts.set(key, lut);
  }
  return lut;
}

/** Colour of a signed number on a scale whose largest size is `max` (linear in the size). */
export function signedColour(theme, v, max) {
  const [pos, neg] = signedLut(theme);
  const s = max > 0 ? Math.round(Math.max(0, Math.min(1, Math.abs(v) / max)) * 32) : 0;
  return v < 0 ? neg[s] : pos[s];
}

/** A token's text made visible for labels: spaces as '·', newlines and tabs as arrows. */
export function tokenLabel(text, max = 16) {
  let s = String(text)
    .replace(/\r\n|\n|\r/g, '↵')
    .replace(/\t/g, '⇥')
    .replace(/ /g, '·');
  if (s === '') s = '∅';
  if ([...s].length > max) s = [...s].slice(0, max - 1).join('') + '…';
  return s;
}

/** A token's text for sentences (screen readers, tooltips): trimmed; "space" for whitespace. */
export function tokenWords(text) {
  const s = String(text).replace(/\s+/g, ' ').trim();
  return s === '' ? (String(text).includes('\n') ? 'line break' : 'space') : s;
}

/** A token for sentences: 'chef' in quotes, or a space / a line break without quotes. */
export function quoteToken(text) {
  const s = String(text).replace(/\s+/g, ' ').trim();
  if (s !== '') return `'${s}'`;
  return String(text).includes('\n') ? 'a line break' : 'a space';
}

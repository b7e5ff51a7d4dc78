// The one DOM helper of the components (views, lab panels, the two elements, the writer). Text
// reaches the DOM only through textContent, never markup; styles only as constructed stylesheets.

/** A new element with a class and text content (never markup). */
export function el(doc, tag, cls, text) {
  const e = doc.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** An open shadow root on `host`, styled by `sheets` (lazySheets()'s). */
export function styledShadow(host, sheets) {
  const root = host.attachShadow({ mode: 'open' });
  root.adoptedStyleSheets = sheets;
  return root;
}

/**
 * Both elements' start: an open shadow root on `host` styled by `sheets`, and host.ready, a promise
 * that resolves (with the element) after its first successful render, rendered()'s. Returns the root
 * and ready's resolve.
 */
export function shadowWithReady(host, sheets) {
  let resolveReady;
  host.ready = new Promise((r) => {
    resolveReady = r;
  });
  return { root: styledShadow(host, sheets), resolveReady };
}

/** After an element rendered: its bubbling, composed `headscope-render` event with `detail`, and its ready resolved. */
export function rendered(host, resolveReady, detail) {
  host.dispatchEvent(new CustomEvent('headscope-render', { detail, bubbles: true, composed: true }));
  resolveReady(host);
}

/**
 * The shadow-root styles of `texts`, as constructed stylesheets (allowed under `style-src 'self'`,
 * unlike <style> elements): a function that makes them on its first call and then returns them.
 */
export function lazySheets(...texts) {
  let sheets = null;
  return () => {
    sheets ??= texts.map((text) => {
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(text);
      return sheet;
    });
    return sheets;
  };
}

/**
 * Shows `fraction` (0 to 1) of a bar: `fill` (a .hs-progress-fill or .hs-topk-fill, full width in
 * CSS) scaled along x, a transform, which the compositor animates where a bar has a transition (the
 * top-k bars). Setting `width` instead lays out and paints the page at every frame of a transition:
 * on a 2-core machine those frames took the engine's second thread. The demo's progress bar, whose
 * width moved in a 0.15 s transition after each step of a long first run, made 75 frames and 0.6 s
 * of the page's thread in a 3.4 s run of GPT-2 small's shape at 1,000 tokens; unanimated, 17 frames
 * and 0.3 s (bench/README.md, "Long texts in the page").
 */
export function setFill(fill, fraction) {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  fill.style.transform = `scaleX(${f.toFixed(4)})`; // CSSOM: allowed under a strict CSP
}

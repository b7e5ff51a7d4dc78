// Keystroke-to-paint on the project's demo page (web/demo), measured from outside: an init script
// (page.addInitScript(DEMO_PROBE)) for the page benchmarks.
// An init script records keydown timestamps and watches body[data-renders], which the demo bumps at
// the end of each render; the paint is that frame's (render inside a frame) or the next one's.
export const DEMO_PROBE = `(() => {
  const b = (window.__demoBench = { keys: [], renders: 0, pending: null, firstRender: null });
  // frame counter; inFrame is true from the first rAF callback of a frame until the task after its paint
  let frame = 0, inFrame = false;
  const after = new MessageChannel();
  after.port1.onmessage = () => { inFrame = false; };
  const tick = () => { frame++; inFrame = true; after.port2.postMessage(0); requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  document.addEventListener('keydown', (e) => { b.pending = { t: e.timeStamp, frame }; }, true);
  const watch = () => new MutationObserver(() => {
    const n = Number(document.body.dataset.renders || 0);
    if (n === b.renders) return;
    b.renders = n;
    const rendered = performance.now(), p = b.pending;
    const ran = /ran in ([0-9.]+) ms/.exec(document.getElementById('stats')?.textContent || '');
    b.pending = null;
    // rendered inside a frame: painted at its end; rendered between frames: painted in the next one
    const shown = inFrame ? frame : frame + 1;
    const finish = () => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => {
        const painted = performance.now();
        if (b.firstRender === null) b.firstRender = { rendered, painted };
        // render_ms: the demo's own time from the worker's result to all views updated (window.headscopeDemo.renderMs)
        const renderMs = window.headscopeDemo && typeof window.headscopeDemo.renderMs === 'number' ? window.headscopeDemo.renderMs : null;
        const onPage = window.headscopeDemo?.result?.ranOnPage ?? null; // fast typing: run on the page thread
        if (p) b.keys.push({ T: Number(document.body.dataset.tokens || 0), to_render_ms: rendered - p.t, to_paint_ms: painted - p.t, frames: shown - p.frame, run_ms: ran ? Number(ran[1]) : null, render_ms: renderMs, on_page: onPage });
      };
      ch.port2.postMessage(0);
    };
    if (inFrame) finish(); else requestAnimationFrame(finish);
  }).observe(document.body, { attributes: true, attributeFilter: ['data-renders'] });
  if (document.body) watch(); else document.addEventListener('DOMContentLoaded', watch);
})();`;

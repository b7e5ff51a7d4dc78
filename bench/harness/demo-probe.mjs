// Keystroke-to-paint on the project's demo page (web/demo), measured from outside: the one init script
// (page.addInitScript(DEMO_PROBE)) of the page benchmarks (page-bench.mjs, long-text-bench.mjs,
// typing-bench.mjs).
// It watches body[data-renders], which the demo bumps at the end of each render, and finds the frame
// that paints each render: rendered inside a frame, painted at its end; between frames, in the next.
// It reads only what every version of the demo publishes (#text, #stats, body[data-renders] and
// window.headscopeDemo), so it times an old commit's site as well as today's. Two records:
//   window.__demoBench  each keydown with the render that followed it: { keys: [{ T, to_render_ms,
//                       to_paint_ms, frames, run_ms, render_ms, on_page }], firstRender }
//   window.__typing     every input event (its time and the text it left) and every paint with the
//                       text it shows: { inputs: [{ t, text }], shown: [{ text, t }] }; a keystroke
//                       is shown by the first paint of its own text after it
// With frameLoop (DEMO_PROBE), a requestAnimationFrame loop counts every frame, so that `frames` says
// how many frames a keystroke took. That loop makes Chromium produce a frame at every vsync (layerize,
// commit, the compositor's and the display's work) where an idle page produces none: on a page as
// large as a long text's, some 2-4 ms of CPU a frame beside the engine. Without it (DEMO_PROBE_QUIET,
// the long-text bench's), frames are those the page asks for, `frames` is null, and inFrame comes
// from wrapping the page's own requestAnimationFrame callbacks.
export const demoProbe = ({ frameLoop }) => `(() => {
  const b = (window.__demoBench = { keys: [], renders: 0, pending: null, firstRender: null });
  const typing = (window.__typing = { inputs: [], shown: [] });
  // frame counter; inFrame is true from the first rAF callback of a frame until the task after its paint
  let frame = 0, inFrame = false;
  const after = new MessageChannel();
  after.port1.onmessage = () => { inFrame = false; };
  const raf = window.requestAnimationFrame.bind(window);
  const framed = (cb) => (t) => { if (!inFrame) { frame++; inFrame = true; after.port2.postMessage(0); } cb(t); };
  if (${frameLoop}) {
    const tick = () => raf(framed(tick));
    tick();
  } else window.requestAnimationFrame = (cb) => raf(framed(cb));
  document.addEventListener('keydown', (e) => { b.pending = { t: e.timeStamp, frame }; }, true);
  document.addEventListener('input', (e) => { if (e.target.id === 'text') typing.inputs.push({ t: e.timeStamp, text: e.target.value }); }, true);
  const watch = () => new MutationObserver(() => {
    const n = Number(document.body.dataset.renders || 0);
    if (n === b.renders) return;
    b.renders = n;
    const rendered = performance.now(), p = b.pending;
    const ran = /ran in ([0-9.]+) ms/.exec(document.getElementById('stats')?.textContent || '');
    const text = window.headscopeDemo?.result?.text;
    b.pending = null;
    // rendered inside a frame: painted at its end; rendered between frames: painted in the next one
    const shown = inFrame ? frame : frame + 1;
    const finish = () => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => {
        const painted = performance.now();
        typing.shown.push({ text, t: painted });
        if (b.firstRender === null) b.firstRender = { rendered, painted };
        // render_ms: the demo's own time from the worker's result to all views updated (window.headscopeDemo.renderMs)
        const renderMs = window.headscopeDemo && typeof window.headscopeDemo.renderMs === 'number' ? window.headscopeDemo.renderMs : null;
        const onPage = window.headscopeDemo?.result?.ranOnPage ?? null; // fast typing: run on the page thread
        if (p) b.keys.push({ T: Number(document.body.dataset.tokens || 0), to_render_ms: rendered - p.t, to_paint_ms: painted - p.t, frames: ${frameLoop} ? shown - p.frame : null, run_ms: ran ? Number(ran[1]) : null, render_ms: renderMs, on_page: onPage });
      };
      ch.port2.postMessage(0);
    };
    if (inFrame) finish(); else raf(framed(finish));
  }).observe(document.body, { attributes: true, attributeFilter: ['data-renders'] });
  if (document.body) watch(); else document.addEventListener('DOMContentLoaded', watch);
})();`;
export const DEMO_PROBE = demoProbe({ frameLoop: true });
export const DEMO_PROBE_QUIET = demoProbe({ frameLoop: false });

// Until the demo's lab has measured the model's roles (its runs on probe texts at the reader's first
// pause take the engine's cache), or said it could not.
export async function labRolesMeasured(page, timeout) {
  await page.waitForFunction(
    () =>
      /Induction measured|could not run|no probe/.test(
        document.querySelector('.hs-lab-roles-status')?.textContent ?? '',
      ),
    null,
    { timeout },
  );
}

// The caret at the end of the demo's text, and window.__typing's records emptied: typing starts here.
export async function startTyping(page) {
  await page.focus('#text');
  await page.keyboard.press('End');
  await page.evaluate(() => {
    window.__typing.inputs = [];
    window.__typing.shown = [];
  });
}

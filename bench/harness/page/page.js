// Page-level measurements, reported on window.__bench:
//   cold: time from navigation start to the first frame showing attention maps (load the core and the
//         model, run the initial text, draw), with its phases
//   keys: per keystroke, from the keydown event's timestamp to the frame that shows its result
//         (the requestAnimationFrame callback after drawing, then the task after that frame's paint)
const params = new URLSearchParams(location.search);
const mode = params.get('mode') || 'main';
const bench = (window.__bench = { mode, cold: {}, keys: [], ready: false, error: null });
const textBox = document.getElementById('text');
const canvas = document.getElementById('maps');
const ctx = canvas.getContext('2d');

// A frame counter: a requestAnimationFrame loop that runs all the time, so "painted in the next
// frame" can be told apart from "painted one or more frames late".
let frame = 0;
const tick = () => {
  frame++;
  requestAnimationFrame(tick);
};
requestAnimationFrame(tick);

const afterPaint = () =>
  new Promise((resolve) => {
    requestAnimationFrame((frameTime) => {
      const raf = performance.now();
      const shownInFrame = frame; // tick registered earlier, so it already ran in this frame
      // a message posted from rAF is handled after that frame's paint
      const ch = new MessageChannel();
      ch.port1.onmessage = () => resolve({ raf, painted: performance.now(), frameTime, shownInFrame });
      ch.port2.postMessage(0);
    });
  });

// All attention maps in a grid, one T x T heat map per head, each scaled to a 120 px cell.
let scratch = null;
function draw(result) {
  const { T, nLayer, nHead, attentionAll } = result;
  if (!scratch || scratch.width !== T) {
    scratch = new OffscreenCanvas(T, T);
  }
  const sctx = scratch.getContext('2d');
  const img = sctx.createImageData(T, T);
  const cell = 120,
    pad = 4;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.imageSmoothingEnabled = false;
  for (let l = 0; l < nLayer; l++) {
    for (let h = 0; h < nHead; h++) {
      const off = (l * nHead + h) * T * T;
      const px = img.data;
      for (let i = 0; i < T * T; i++) {
        const v = Math.min(255, Math.round(Math.sqrt(attentionAll[off + i]) * 255));
        px[4 * i] = 255 - v;
        px[4 * i + 1] = 255 - v * 0.6;
        px[4 * i + 2] = 255;
        px[4 * i + 3] = 255;
      }
      sctx.putImageData(img, 0, 0);
      ctx.drawImage(scratch, h * (cell + pad), l * (cell + pad), cell, cell);
    }
  }
}

async function main() {
  const t0 = performance.now();
  const modelUrl = new URL(params.get('model') || '/model/', location.href);
  let model;
  if (mode === 'worker') {
    // The package's own worker. Where its time goes is measured apart: the same run inside a worker
    // without messaging (window.__runInWorker) and an empty round trip right after a keystroke.
    const { loadModelInWorker } = await import('/pkg/headscope-worker.js');
    model = await loadModelInWorker(modelUrl);
  } else {
    const { loadModel } = await import('/pkg/headscope.js');
    model = await loadModel(modelUrl);
  }
  const tLoaded = performance.now();
  textBox.value = params.get('text') || 'The';
  const r0 = await model.run(textBox.value);
  const tRun = performance.now();
  draw(r0);
  const tDrawn = performance.now();
  const p = await afterPaint();
  Object.assign(bench.cold, {
    module_and_model_ms: tLoaded - t0,
    first_run_ms: tRun - tLoaded,
    draw_ms: tDrawn - tRun,
    navigation_to_script_ms: t0,
    navigation_to_first_attention_frame_ms: p.raf,
    navigation_to_first_attention_painted_ms: p.painted,
    T: r0.T,
  });

  let keydownAt = 0,
    keydownFrame = 0;
  textBox.addEventListener('keydown', (e) => {
    keydownAt = e.timeStamp;
    keydownFrame = frame;
  });
  let busy = Promise.resolve();
  textBox.addEventListener('input', () => {
    const start = keydownAt,
      startFrame = keydownFrame;
    const text = textBox.value;
    busy = busy.then(async () => {
      const t1 = performance.now();
      const r = await model.run(text);
      const t2 = performance.now();
      draw(r);
      const t3 = performance.now();
      const f = await afterPaint();
      bench.keys.push({
        T: r.T,
        reused: r.reusedTokens,
        queued_ms: t1 - start,
        run_ms: t2 - t1,
        draw_ms: t3 - t2,
        work_ms: t3 - start,
        frames: f.shownInFrame - startFrame,
        to_frame_ms: f.raf - start,
        to_paint_ms: f.painted - start,
      });
    });
  });
  window.__benchModel = model;
  bench.ready = true;
}
main().catch((e) => {
  bench.error = String((e && e.stack) || e);
});

// Round trip of an empty message to a worker and back, n times: the cost of the thread hops alone.
window.__pingWorker = async (n) => {
  const w = new Worker(new URL('./ping-worker.js', import.meta.url));
  const out = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await new Promise((resolve) => {
      w.onmessage = resolve;
      w.postMessage(i);
    });
    out.push(performance.now() - t0);
    // a pause between pings: each one then leaves from an idle page to an idle worker, the case this
    // figure stands for (not a wait for a condition; nothing is timed across it)
    await new Promise((r) => setTimeout(r, 5));
  }
  w.terminate();
  return out;
};

// The same incremental run (typing one character at the end of `text`), timed n times in a module
// worker and on this thread, without messaging in the timed part.
window.__runInWorker = (text, n) =>
  new Promise((resolve) => {
    const w = new Worker(new URL('./run-worker.js', import.meta.url), { type: 'module' });
    w.onmessage = (e) => {
      w.terminate();
      resolve(e.data);
    };
    w.postMessage({ text, n });
  });

window.__runHere = async (text, n) => {
  const model = window.__benchModel;
  const out = [];
  for (let i = 0; i < n; i++) {
    await model.run(text.slice(0, text.length - 1));
    const t0 = performance.now();
    await model.run(text);
    out.push(performance.now() - t0);
  }
  return out;
};

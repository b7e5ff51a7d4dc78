// The page of bench/harness/browser-llama-prefill.mjs: one module Worker per subject (worker.js), all on
// this cross-origin-isolated page, driven one at a time through window.__bench. What is timed is timed
// inside the workers, so messaging to them is not part of it.
import { subjectPool } from '/common/subjects.js';

const subjects = subjectPool(new URL('./worker.js', import.meta.url));
const { call } = subjects;

window.__bench = {
  isolated: self.crossOriginIsolated,
  cores: navigator.hardwareConcurrency,
  /** Starts subject `name` (worker.js's init: kind 'headscope' or 'wllama', and its options). */
  start: (name, options) => subjects.start(name, options),
  call,
  /** Ends subject `name`'s Worker (and the Workers it started): its memory goes back before the next phase. */
  end: (name) => subjects.end(name),
};

// watchOnScreen (web/demo/index/on-screen.js) with a stand-in IntersectionObserver: a panel's
// `visible` follows the latest report, also when one callback carries several (it left the viewport
// and came back between two deliveries, as after a full-page screenshot or a scroll there and back
// on a busy page), and onChange fires only when that changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { watchOnScreen } from '../../../web/demo/index/on-screen.js';

function withObserver(fn) {
  const saved = globalThis.IntersectionObserver;
  let deliver = null;
  globalThis.IntersectionObserver = class {
    constructor(callback) {
      deliver = (...states) => callback(states.map((isIntersecting) => ({ isIntersecting })));
    }
    observe() {}
  };
  try {
    fn((...states) => deliver(...states));
  } finally {
    globalThis.IntersectionObserver = saved;
  }
}

test('visible follows the last entry of each callback; onChange only on a change', () => {
  withObserver((deliver) => {
    const changes = [];
    const watch = watchOnScreen({}, (v) => changes.push(v));
    assert.equal(watch.visible, true, 'visible until the first report, so a panel is never left blank');
    deliver(false);
    assert.equal(watch.visible, false);
    deliver(false, true); // left, then came back, reported together
    assert.equal(watch.visible, true);
    deliver(true, false);
    assert.equal(watch.visible, false);
    deliver(true, false); // ends where it was: no change
    assert.deepEqual(changes, [false, true, false]);
  });
});

test('without an element or an IntersectionObserver the panel counts as on screen', () => {
  assert.equal(watchOnScreen(null).visible, true);
  const saved = globalThis.IntersectionObserver;
  delete globalThis.IntersectionObserver;
  try {
    assert.equal(watchOnScreen({}).visible, true);
  } finally {
    if (saved) globalThis.IntersectionObserver = saved;
  }
});

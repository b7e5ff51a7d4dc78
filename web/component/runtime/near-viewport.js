// loading="lazy" on a widget, as on an <img>: its model is fetched only once the widget comes within
// NEAR_MARGIN of the viewport, so an article with many widgets downloads what the reader scrolls to.
// Without the attribute (or without IntersectionObserver) the widget loads at once.

/** How close to the viewport a lazy widget starts loading (a phone screen or so ahead of the reader). */
export const NEAR_MARGIN = '800px 0px';

/** Whether `el` waits for the viewport (loading="lazy"). */
export function isLazy(el) {
  return el.getAttribute('loading') === 'lazy' && typeof IntersectionObserver === 'function';
}

/** Resolves once `el` is within `margin` of the viewport; at once when it is not lazy. */
export function whenNear(el, margin = NEAR_MARGIN) {
  return isLazy(el) ? onceNear(el, margin) : Promise.resolve();
}

/** Resolves once `el` is within `margin` of the viewport (at once without IntersectionObserver). */
export function onceNear(el, margin = NEAR_MARGIN) {
  if (typeof IntersectionObserver !== 'function') return Promise.resolve();
  return new Promise((resolve) => {
    const io = new IntersectionObserver(
      (entries) => {
        if (!entries.some((e) => e.isIntersecting)) return;
        io.disconnect();
        resolve();
      },
      { rootMargin: margin },
    );
    io.observe(el);
  });
}

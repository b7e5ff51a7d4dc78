// Whether a panel of the page is on screen. A panel off screen does no work while the reader types:
// its view is drawn, and what it needs from the model is asked for, when it comes into view.

/**
 * Watches `el`; `visible` is true while any of it is in the viewport (and until the first report,
 * so a panel is never left blank); `onShow()` when it comes into view (draw it then).
 */
export function watchOnScreen(el, onShow) {
  const watch = { visible: true };
  if (!el || typeof IntersectionObserver !== 'function') return watch;
  new IntersectionObserver(([entry]) => {
    const was = watch.visible;
    watch.visible = entry.isIntersecting;
    if (watch.visible && !was) onShow?.();
  }).observe(el);
  return watch;
}

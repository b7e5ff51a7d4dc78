// Whether a panel of the page is on screen. A panel off screen does no work while the reader types:
// its view is drawn, and what it needs from the model is asked for, when it comes into view.

/**
 * Watches `el`; `visible` is true while any of it is in the viewport (and until the first report,
 * so a panel is never left blank); `onChange(visible)` when it comes into view (draw it then) or
 * leaves it (withdraw what it asked of the model).
 */
export function watchOnScreen(el, onChange) {
  const watch = { visible: true };
  if (!el || typeof IntersectionObserver !== 'function') return watch;
  // one callback may carry several entries for el (it left and came back between two deliveries,
  // as a busy page or a scroll and back gives): the last one is where it is now
  new IntersectionObserver((entries) => {
    const now = entries[entries.length - 1].isIntersecting;
    if (watch.visible === now) return;
    watch.visible = now;
    onChange?.(watch.visible);
  }).observe(el);
  return watch;
}

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
  new IntersectionObserver(([entry]) => {
    if (watch.visible === entry.isIntersecting) return;
    watch.visible = entry.isIntersecting;
    onChange?.(watch.visible);
  }).observe(el);
  return watch;
}

// A view's room, read without forcing a layout. Reading clientWidth while a page draws (the views
// change the DOM, then the next view asks for its width) makes the browser lay out the whole page
// there and then, once per view per keystroke: that was most of the demo's per-keystroke cost after
// the inside and combine views were added. A ResizeObserver hears the width after the browser's own
// layout, when reading it is free; the view keeps it and redraws when it changes.

/**
 * The width of `el` (its clientWidth), kept current by a ResizeObserver; `onChange(width)` hears a
 * change after the first reading (redraw there). Without ResizeObserver (old browsers, Node) every
 * read measures, as before.
 */
export class HostWidth {
  #width = null;
  #observer = null;

  constructor(el, onChange = null) {
    this.el = el;
    const RO = el?.ownerDocument?.defaultView?.ResizeObserver ?? globalThis.ResizeObserver;
    if (typeof RO !== 'function' || !el) return;
    this.#observer = new RO(() => {
      const w = el.clientWidth; // inside the observer's callback: layout is done, the read is free
      if (w === this.#width) return;
      const had = this.#width !== null;
      this.#width = w;
      if (had) onChange?.(w);
    });
    this.#observer.observe(el);
  }

  /** The element's clientWidth (measured once, then as the observer reports it). */
  get width() {
    if (!this.#observer) return this.el?.clientWidth ?? 0;
    if (this.#width === null) this.#width = this.el.clientWidth;
    return this.#width;
  }

  disconnect() {
    this.#observer?.disconnect();
  }
}

// The one DOM helper of the components (views, lab panels, the two elements, the writer). Text
// reaches the DOM only through textContent, never markup.

/** A new element with a class and text content (never markup). */
export function el(doc, tag, cls, text) {
  const e = doc.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// The demo page's small DOM helpers, shared by its panels: text only through textContent.
export const $ = (id) => document.getElementById(id);
/** Sets a node's text only when it changed (no layout work for an unchanged line). */
export const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
};
/** Resolves after the next paint: the frame that shows the result, then a task of its own. */
export const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

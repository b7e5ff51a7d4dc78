// The pages' long explanations, cut to their first sentence: every static p.explain of more than one
// sentence (a paragraph with an id is filled by a script, and left alone) shows its first sentence
// and a "more" button that shows the rest. The rest's nodes are moved into a span, never re-parsed,
// so their markup (links, <i>, <sup>) stays as written. Used by index.html and compare.html.

// abbreviations whose full stop does not end a sentence
const ABBREVIATIONS = /\b(e\.g|i\.e|etc|vs|cf|Fig|Mr|Mrs|Ms|Dr|St)\.$/i;

/**
 * Where the first sentence of `text` ends: the index just after its full stop (or ! or ?) when a
 * space and a capital letter, a digit, a quote or a bracket follow; -1 when the text is one sentence.
 */
export function firstSentenceEnd(text) {
  const re = /[.!?](?=\s+[A-Z0-9“"‘'(])/g;
  let m;
  while ((m = re.exec(text))) {
    if (ABBREVIATIONS.test(text.slice(Math.max(0, m.index - 4), m.index + 1))) continue;
    return m.index + 1;
  }
  return -1;
}

/** Cuts every long static p.explain under `root` (see above); `min`: only paragraphs longer than this. */
export function shortenExplanations(root, { min = 400 } = {}) {
  const doc = root.ownerDocument ?? root;
  let n = 0;
  for (const p of root.querySelectorAll('p.explain:not([id])')) {
    if (p.textContent.length <= min) continue;
    // the first sentence must end in a text node of the paragraph itself
    let cut = null;
    for (const node of p.childNodes) {
      if (node.nodeType !== 3) continue;
      const at = firstSentenceEnd(node.data);
      if (at > 0) {
        cut = { node, at };
        break;
      }
    }
    if (!cut) continue;
    const rest = cut.node.splitText(cut.at);
    const more = doc.createElement('span');
    more.className = 'explain-more';
    more.id = `explain-more-${n++}`;
    more.hidden = true;
    for (let x = rest; x;) {
      const next = x.nextSibling;
      more.appendChild(x);
      x = next;
    }
    const button = doc.createElement('button');
    button.type = 'button';
    button.className = 'explain-more-btn';
    button.textContent = 'more';
    button.setAttribute('aria-expanded', 'false');
    button.setAttribute('aria-controls', more.id);
    button.addEventListener('click', () => {
      more.hidden = !more.hidden;
      button.setAttribute('aria-expanded', String(!more.hidden));
      button.textContent = more.hidden ? 'more' : 'less';
    });
    p.append(more, doc.createTextNode(' '), button);
  }
}

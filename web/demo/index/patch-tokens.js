// "Which heads carry the answer?" (patch-panel.js): the clean and the corrupted text's tokens side by
// side, the ones that differ marked, and the sentence that says whether the two can be patched
// (same number of tokens, at least one different). Token text through textContent only.
import { tokenLabel, tokenWords } from '../../component/runtime/theme.js';

function span(cls, text) {
  const n = document.createElement('span');
  n.className = cls;
  n.textContent = text;
  return n;
}

/** Fills `host` with alignTokens()' columns `al` (web/component/charts/patching.js); returns the sentence. */
export function showAligned(host, al) {
  const cells = [span('patch-rowname', 'clean'), span('patch-rowname', 'corrupted')];
  for (const c of al.columns)
    for (const t of [c.clean, c.corrupted]) {
      const s = span(
        `patch-tok${c.differs ? ' patch-diff' : ''}${t ? '' : ' patch-missing'}`,
        t ? tokenLabel(t.text, 14) : '–',
      );
      if (c.differs) s.title = 'differs';
      cells.push(s);
    }
  host.replaceChildren(...cells);
  const n = (k) => `${k} token${k === 1 ? '' : 's'}`;
  if (!al.sameLength) {
    const c = al.columns.filter((x) => x.clean).length;
    const r = al.columns.filter((x) => x.corrupted).length;
    return `The texts must have the same number of tokens: the clean one has ${c}, the corrupted one ${r}; they first differ at token ${al.first}.`;
  }
  if (al.differing === 0) return 'The texts are the same: change a word in the corrupted one.';
  return `${n(al.columns.length)} each; ${n(al.differing)} differ${al.differing === 1 ? 's' : ''}: ${al.columns
    .filter((c) => c.differs)
    .map((c) => `${tokenWords(c.clean.text)} → ${tokenWords(c.corrupted.text)}`)
    .join(', ')}.`;
}

// The head chips of the lines view: which heads of the layer are drawn together, each in its colour.
export class HeadChips {
  /** onChange(heads, head): the chosen heads and the selected one. */
  constructor(host, { onChange }) {
    this.host = host;
    this.onChange = onChange;
    this.key = '';
  }

  update(result, state, theme) {
    const box = this.host;
    const hidden = state.view !== 'lines';
    if (box.hidden !== hidden) box.hidden = hidden;
    if (hidden || !result) return;
    const shown = state.heads.length ? state.heads : [state.head];
    // typing does not change the chips: rebuild them only when the heads or the theme change
    const key = `${result.nHead}|${shown.join(',')}|${theme.heads.join(',')}|${state.layer}|${state.head}`;
    if (key === this.key && box.childElementCount === result.nHead) return;
    this.key = key;
    const chips = [];
    for (let h = 0; h < result.nHead; h++) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'head-chip';
      const on = shown.includes(h);
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
      const sw = document.createElement('span');
      sw.className = 'swatch';
      if (on) sw.style.background = theme.heads[shown.indexOf(h) % theme.heads.length];
      b.append(sw, document.createTextNode(`head ${h}`));
      b.addEventListener('click', () => {
        let next = shown.includes(h) ? shown.filter((x) => x !== h) : [...shown, h];
        if (next.length === 0) next = [h];
        this.onChange(next, next.includes(state.head) ? state.head : next[0]);
        box.querySelectorAll('button')[h]?.focus();
      });
      chips.push(b);
    }
    box.replaceChildren(...chips);
  }
}

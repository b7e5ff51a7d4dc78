// The lab's "predict, then reveal" panel: hides one head's pattern, asks which earlier token a
// token attends to most (one button per token), then reveals the weights.
import { tokenLabel, tokenWords, quoteToken } from '../runtime/theme.js';
import { attentionAt } from '../../lib/result.js';
import { el } from '../views/dom.js';
import { panel, button } from './panel.js';

/**
 * Options: getResult() -> the latest result, getState() -> { layer, head, token },
 * onHidePattern(layer, head | null): hide or show one head's pattern elsewhere on the page,
 * onChange(): the question started, was answered or ended (the grid redraws its cells).
 * `question` is { layer, head, q, text, revealed, answer, guess } while one is open, else null.
 */
export class QuizPanel {
  constructor(doc, options) {
    this.doc = doc;
    this.o = options;
    this.question = null;
    const quiz = panel(
      doc,
      'hs-lab-quiz',
      'Predict, then reveal',
      "Guess where a head looks before you see it. The head's pattern is hidden until you answer.",
    );
    const row = el(doc, 'div', 'hs-lab-row');
    row.append(
      button(doc, 'hs-lab-quiz-start', 'Quiz me on the selected head', () => this.start(false)),
      button(doc, 'hs-lab-quiz-random', 'Quiz me on a surprising head', () => this.start(true)),
    );
    this.body = el(doc, 'div', 'hs-lab-quiz-body');
    quiz.append(row, this.body);
    this.element = quiz;
  }

  /** True when (layer, head)'s pattern is hidden by an open question. */
  hides(layer, head) {
    const q = this.question;
    return !!q && q.layer === layer && q.head === head && !q.revealed;
  }

  /** Starts a question on the selected head (or, with `surprising`, on a confident head/token). */
  start(surprising) {
    const r = this.o.getResult();
    if (!r || r.T < 3) {
      this.body.textContent = 'Type a longer text first (at least three tokens).';
      return;
    }
    if (!r.attentionAll) {
      this.body.textContent =
        'The quiz reads every head: it runs on texts short enough for the page to hold every map.';
      return;
    }
    const T = r.T;
    const at = (l, h, q, k) => attentionAt(r, l, h, q, k);
    const argmax = (l, h, q) => {
      let best = 0;
      for (let k = 1; k <= q; k++) if (at(l, h, q, k) > at(l, h, q, best)) best = k;
      return best;
    };
    let layer, head, q;
    if (surprising) {
      // a head and token with a clear answer: the strongest key takes >= 0.4 and is neither the
      // token itself, the previous token nor the first token (the interesting guesses); failing
      // that, any clear answer; failing that (a model with only diffuse heads), the clearest ones
      const tiers = [[], [], []];
      const all = [];
      for (let l = 0; l < r.nLayer; l++)
        for (let h = 0; h < r.nHead; h++)
          for (let t = 2; t < T; t++) {
            const k = argmax(l, h, t);
            const w = at(l, h, t, k);
            all.push([l, h, t, w]);
            if (w >= 0.4 && k !== t && k !== t - 1 && k !== 0) tiers[0].push([l, h, t]);
            else if (w >= 0.4) tiers[1].push([l, h, t]);
            else if (w >= 0.25) tiers[2].push([l, h, t]);
          }
      all.sort((x, y) => y[3] - x[3]);
      const cands = tiers.find((c) => c.length) || all.slice(0, 20);
      this.count = (this.count || 0) + 1;
      [layer, head, q] = cands[(this.count * 7919) % cands.length];
    } else {
      const s = this.o.getState();
      layer = s.layer;
      head = s.head;
      q = Number.isInteger(s.token) && s.token >= 1 && s.token < T ? s.token : T - 1;
    }
    this.question = { layer, head, q, text: r.text, revealed: false, answer: argmax(layer, head, q) };
    this.o.onHidePattern?.(layer, head);
    this.o.onChange?.();
    this.#render();
  }

  #render() {
    const d = this.doc;
    const { layer, head, q, revealed, answer, guess } = this.question;
    const r = this.o.getResult();
    const body = this.body;
    const frag = d.createDocumentFragment();
    const qp = el(d, 'p', 'hs-lab-quiz-q');
    qp.append(
      d.createTextNode(`Layer ${layer}, head ${head} (its pattern is hidden). In this head, which token does `),
      el(d, 'strong', 'hs-lab-tok', quoteToken(r.tokens[q].text)),
      d.createTextNode(` (token ${q}) attend to most?`),
    );
    frag.appendChild(qp);
    const choices = el(d, 'div', 'hs-lab-choices');
    choices.setAttribute('role', 'group');
    choices.setAttribute('aria-label', 'Earlier tokens to choose from');
    const T = r.T;
    for (let k = 0; k <= q; k++) {
      const b = el(d, 'button', 'hs-lab-choice', tokenLabel(r.tokens[k].text, 18));
      b.type = 'button';
      b.dataset.index = String(k);
      b.setAttribute('aria-label', `token ${k}: ${tokenWords(r.tokens[k].text)}${k === q ? ' (itself)' : ''}`);
      if (revealed) {
        b.disabled = true;
        const w = attentionAt(r, layer, head, q, k);
        b.appendChild(el(d, 'span', 'hs-lab-choice-w', w.toFixed(2)));
        b.style.setProperty('--w', String(w));
        b.classList.add('hs-revealed');
        if (k === answer) b.classList.add('hs-answer');
        if (k === guess) b.classList.add('hs-guess');
      } else {
        b.addEventListener('click', () => this.answer(k));
      }
      choices.appendChild(b);
    }
    frag.appendChild(choices);
    const res = el(d, 'p', 'hs-lab-quiz-result');
    res.setAttribute('role', 'status');
    if (revealed) {
      const w = attentionAt(r, layer, head, q, answer);
      const target = answer === q ? 'itself' : quoteToken(r.tokens[answer].text);
      res.textContent =
        guess === answer
          ? `Right: it attends most to ${target} (weight ${w.toFixed(2)}). The numbers under the tokens are the head's weights; the grid and detail view show the pattern again.`
          : `Not quite: it attends most to ${target} (weight ${w.toFixed(2)}); your guess got ${attentionAt(r, layer, head, q, guess).toFixed(2)}. The numbers under the tokens are the head's weights.`;
      if (w < 0.2)
        res.textContent +=
          ' This head spreads its attention thinly here: no token gets much more than the others, so there was no clear answer.';
      const again = el(d, 'button', 'hs-lab-btn hs-lab-quiz-next', 'Another question');
      again.type = 'button';
      again.addEventListener('click', () => this.start(true));
      frag.append(res, again);
    } else {
      frag.appendChild(res);
    }
    body.replaceChildren(frag);
    body.dataset.state = revealed ? 'revealed' : 'asking';
    const focusEl = revealed ? body.querySelector('.hs-lab-quiz-next') : body.querySelector('.hs-lab-choice');
    focusEl?.focus();
  }

  answer(k) {
    if (!this.question || this.question.revealed) return;
    this.question.guess = k;
    this.question.revealed = true;
    this.o.onHidePattern?.(null, null);
    this.o.onChange?.();
    this.#render();
  }

  end() {
    if (!this.question) return;
    const wasHidden = !this.question.revealed;
    this.question = null;
    this.body.replaceChildren();
    delete this.body.dataset.state;
    if (wasHidden) this.o.onHidePattern?.(null, null);
    this.o.onChange?.();
  }
}

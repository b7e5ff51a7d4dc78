// The "lab", shared by the demo page (web/demo/lab-panel.js) and the <headscope-lab> element. Its
// panels, one module each under lab/:
//   - switch heads off (lab/switch-off.js): click or press X on the grid's cells; the views re-run
//     with `ablate`; the change in the next-token probabilities and the mean loss is shown
//   - knock out each head in turn (lab/knockout.js): knockoutRanking() from the analysis module
//   - head roles (lab/roles.js): badges on the grid cells, measured live, with a legend of every
//     score's formula and threshold
//   - predict, then reveal (lab/quiz.js)
// This module wires them to the grid: crossed-out cells, badges, hidden patterns, accessible names.
// Built on the package's public API only. Tokens reach the DOM only through textContent.
import { headBadges, HeadScoreRows } from '../../lib/analysis.js';
import { parseAblate, formatAblate } from '../../lib/result.js';
import { el } from '../views/dom.js';
import { SwitchOffPanel } from './switch-off.js';
import { KnockoutPanel, REDUNDANT_DELTA } from './knockout.js';
import {
  RolesPanel,
  ROLE_SHORT,
  ROLE_FORMULAS,
  ROLE_NAMES,
  BADGE_THRESHOLDS,
  liveScores,
  rolesSentence,
} from './roles.js';
import { QuizPanel } from './quiz.js';
import { headSharing } from '../model/kv-groups.js';

export { parseAblate, formatAblate, REDUNDANT_DELTA, ROLE_SHORT, ROLE_FORMULAS, ROLE_NAMES, liveScores, rolesSentence };

// Quiet time after the latest result before the role probes run (see update()).
const PROBE_AFTER_PAUSE_MS = 800;

/**
 * Calls `fn` once, in a task after the next frame has been painted (so that work which can wait,
 * such as the role scores, never delays the frame showing a new result). Pages that get no frames
 * (hidden tabs) run it after 200 ms. Returns a function that cancels the call.
 */
function afterNextPaint(fn) {
  let done = false;
  const run = () => {
    if (!done) {
      done = true;
      fn();
    }
  };
  requestAnimationFrame(() => setTimeout(run, 0));
  const timer = setTimeout(run, 200);
  return () => {
    done = true;
    clearTimeout(timer);
  };
}

/**
 * The lab's controller. `host`: an element to build the lab panel in. Options:
 *   getModel: () => Promise<WorkerModel>, getProbeSentences?: () => the model card's probe sentences
 *   (verb-to-subject badges), or a promise of them, grid: the GridView whose cells get badges and
 *   switch-off clicks, gridHost: the element holding that grid, getResult(), getText(),
 *   getState() -> { layer, head, token }, initialAblate, onAblate(pairs): re-run the views with
 *   these heads off, onHidePattern(layer, head | null): hide/unhide one head's pattern elsewhere
 *   on the page, onSelect(layer, head): focus a head (from the knock-out list),
 *   onUpdated(lab): after every update(), for pages that show more of the lab's state;
 *   typing?: () => true while the page's own runs are in flight or pending (the probes wait).
 */
export class Lab {
  constructor(host, opts) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.o = opts;
    this.scores = null;
    this.scoreRows = new HeadScoreRows(); // live scores, row by row: typing computes only new rows
    const d = this.doc;
    this.switchOff = new SwitchOffPanel(d, {
      initialAblate: opts.initialAblate,
      getModel: opts.getModel,
      getText: opts.getText,
      onAblate: (pairs) => {
        this.decorate();
        this.knockout.clear();
        opts.onAblate?.(pairs);
      },
      onMode: (on) => {
        opts.gridHost.classList.toggle('hs-switch-mode', on);
        this.decorate();
      },
    });
    this.knockout = new KnockoutPanel(d, {
      getModel: opts.getModel,
      getText: opts.getText,
      getAblate: () => this.ablate,
      onSelect: opts.onSelect,
    });
    this.roles = new RolesPanel(d);
    this.quizPanel = new QuizPanel(d, {
      getResult: () => this.result,
      getState: opts.getState,
      onHidePattern: opts.onHidePattern,
      onChange: () => this.decorate(),
    });
    const root = el(d, 'div', 'hs-lab');
    root.append(this.switchOff.element, this.knockout.element, this.roles.element, this.quizPanel.element);
    host.appendChild(root);
    this.#wireGrid();
  }

  /** The switched-off heads, sorted: [[layer, head], ...]. */
  get ablate() {
    return this.switchOff.ablate;
  }
  /** The open question of "predict, then reveal", or null. */
  get quiz() {
    return this.quizPanel.question;
  }

  setSwitchMode(on) {
    this.switchOff.setSwitchMode(on);
  }
  toggle(l, h) {
    this.switchOff.toggle(l, h);
  }
  setAblate(pairs) {
    this.switchOff.setAblate(pairs);
  }
  runKnockout() {
    return this.knockout.run();
  }
  startQuiz(surprising) {
    this.quizPanel.start(surprising);
  }
  answerQuiz(k) {
    this.quizPanel.answer(k);
  }
  endQuiz() {
    this.quizPanel.end();
  }

  #listeners = new AbortController();

  /** Stops listening to the grid (before a new Lab takes it over, e.g. for another model). */
  dispose() {
    this.disposed = true;
    clearTimeout(this.probeTimer);
    this.#listeners.abort();
    this.cancelScore?.();
    this.switchOff.dispose();
  }

  #wireGrid() {
    const gh = this.o.gridHost;
    const { signal } = this.#listeners;
    // capture phase: runs before the grid's own click (which selects a head)
    gh.addEventListener(
      'click',
      (e) => {
        if (!this.switchOff.switchMode) return;
        const c = e.target.closest?.('[data-layer]');
        if (!c) return;
        e.stopPropagation();
        e.preventDefault();
        this.switchOff.toggle(Number(c.dataset.layer), Number(c.dataset.head));
        c.focus();
      },
      { capture: true, signal },
    );
    gh.addEventListener(
      'keydown',
      (e) => {
        const c = e.target.closest?.('[data-layer]');
        if (!c) return;
        const k = e.key;
        if (k === 'x' || k === 'X' || k === 'Delete' || (this.switchOff.switchMode && (k === 'Enter' || k === ' '))) {
          e.stopPropagation();
          e.preventDefault();
          this.switchOff.toggle(Number(c.dataset.layer), Number(c.dataset.head));
        }
      },
      { capture: true, signal },
    );
  }

  /** Call after the views rendered `result` (which was run with the current ablation). */
  update(result) {
    // Scores once per result (a page re-renders one result for every hover or selection), computed
    // just after the frame that paints the result (a few ms for 32 heads x 128 tokens), so typing
    // stays within a frame; until then the cells keep the previous badges.
    if (result !== this.result) {
      this.result = result;
      this.resultAt = performance.now();
      this.cancelScore?.();
      this.cancelScore = afterNextPaint(() => this.#score());
    }
    // The probes run once per model, when the reader pauses: their runs take the engine's cache
    // from the text on screen, and a keystroke meanwhile would compute the whole text again (seconds
    // for GPT-2 on a long text; the worker gives the cache back once it is idle).
    if (!this.probeStarted) {
      clearTimeout(this.probeTimer);
      this.probeTimer = setTimeout(() => {
        this.probeStarted = true;
        this.roles
          .probe(async () => this.#pausingForTyping(await this.o.getModel()), this.o.getProbeSentences?.())
          .then((measured) => {
            if (measured && !this.probeScored && !this.disposed) {
              this.probeScored = true;
              if (this.result) this.#score();
              this.o.onRoles?.();
            }
          });
      }, PROBE_AFTER_PAUSE_MS);
    }
    this.decorate();
    this.switchOff.scheduleLoss();
    if (this.quiz && this.quiz.text !== result.text) this.endQuiz();
    this.o.onUpdated?.(this);
  }

  // The model as the probes see it: each of their runs first waits until the page has no run in
  // flight and no new result has come for PROBE_AFTER_PAUSE_MS. A probe run takes the engine's cache from the text on screen, so the
  // reader's next keystroke computes the whole text again (seconds for GPT-2 on a long text); a
  // reader who types while the probes run pays for that once, not once per probe run, and the
  // probes go on at the next pause (the worker gives the cache back to the text once it is idle).
  #pausingForTyping(model) {
    const pause = () =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (this.disposed) return reject(new Error('the lab was replaced')); // another model's lab took over
          const quiet = performance.now() - (this.resultAt ?? 0);
          if (this.o.typing?.()) setTimeout(check, PROBE_AFTER_PAUSE_MS);
          else if (quiet >= PROBE_AFTER_PAUSE_MS) resolve();
          else setTimeout(check, PROBE_AFTER_PAUSE_MS - quiet);
        };
        check();
      });
    return new Proxy(model, {
      get(target, prop) {
        if (prop === 'run')
          return async (...args) => {
            await pause();
            return target.run(...args);
          };
        const v = target[prop];
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }

  #score() {
    const r = this.result;
    if (!r) return;
    try {
      this.scores = liveScores(r, this.roles.probeScores, this.scoreRows);
    } catch {
      this.scores = null;
    }
    this.scoresResult = r;
    this.decorate();
  }

  /** Crossed-out cells, badges and accessible names on the grid. */
  decorate() {
    if (this.disposed) return; // the grid is the next model's lab's now
    const cells = this.o.grid?.cells;
    if (!cells) return;
    const res = this.result;
    // called after every render: write only what changed (each write makes the browser restyle)
    const setAttr = (node, name, value) => {
      if (node.getAttribute(name) !== value) node.setAttribute(name, value);
    };
    cells.forEach((row, l) =>
      row.forEach((entry, h) => {
        const { cell, badge } = entry;
        const off = this.switchOff.isOff(l, h);
        if (cell.classList.contains('hs-ablated') !== off) cell.classList.toggle('hs-ablated', off);
        setAttr(cell, 'data-ablated', off ? 'true' : 'false');
        const s = this.scores?.[l]?.[h];
        const roles = s ? headBadges(s, BADGE_THRESHOLDS) : [];
        const badgeText = roles.map((r) => ROLE_SHORT[r]).join(' ');
        if (badge.textContent !== badgeText) badge.textContent = badgeText;
        setAttr(cell, 'data-roles', roles.join(' '));
        const hidden = res && this.quizPanel.hides(l, h);
        const shared = res ? headSharing(res.nHead, res.nKvHead ?? res.nHead, h) : '';
        const parts = [`Layer ${l}, head ${h}${shared ? ` (${shared})` : ''}`];
        if (off) parts.push('switched off');
        if (hidden) parts.push('pattern hidden until you answer the question');
        else if (s) parts.push(rolesSentence(s, roles));
        if (this.switchOff.switchMode) parts.push(off ? 'press Enter to switch on' : 'press Enter to switch off');
        // the accessible name holds the visible badge text too (WCAG 2.5.3, label in name)
        if (badgeText) parts.push(`badge: ${badgeText}`);
        setAttr(cell, 'aria-label', parts.join(': '));
        let title;
        if (hidden) {
          title = `Layer ${l}, head ${h}: hidden until you answer`;
        } else {
          // the grid's own title for the cell (GridView keeps it as entry.title), then the roles
          const base = entry.title ?? cell.title.split(' · found after training')[0];
          title = roles.length ? `${base} · found after training: ${roles.map((x) => ROLE_NAMES[x]).join(', ')}` : base;
        }
        if (cell.classList.contains('hs-pattern-hidden') !== !!hidden)
          cell.classList.toggle('hs-pattern-hidden', !!hidden);
        if (cell.title !== title) cell.title = title;
      }),
    );
  }
}

// "Let the model write", once for the demo page and <headscope-view editable>: Continue draws
// tokens with generate() (temperature, top-k, top-p, seed, how many tokens), one at a time, and
// each goes into the text while the views follow it with the token's result (row updates). Stop,
// typing, a changed attribute or model stop it before the next token, leaving the text and the view
// of the last token shown. Writer is the writing, on any Continue and Stop buttons, status line and
// inputs; WriteBar is its row of controls for the element. The demo page (web/demo/continue.js)
// wires its own controls to a Writer and adds what it shows of the writing.
import { el } from './views/dom.js';

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
}; // text, never markup

// [key, label, default, min, max, step]: the inputs (the demo page's have the same ranges)
const SETTINGS = [
  ['maxTokens', 'Tokens', 20, 1, 1000, 1],
  ['temperature', 'Temperature', 1, 0, 10, 0.1],
  ['topK', 'Top-k', 0, 0, null, 1],
  ['topP', 'Top-p', 1, 0.01, 1, 0.01],
  ['seed', 'Seed', 0, 0, null, 1],
];

/**
 * The writing. controls: { continueButton, stopButton, status, inputs: { maxTokens, temperature,
 * topK, topP, seed } } (number inputs). host:
 *   runner()            the runner (its model writes), or null before a model is loaded
 *   text()              the text to continue
 *   options()           { ablate, valueNorms, reuse } for generate(), once the runner is idle
 *   begin?(prompt, settings)  before the first token, with generate()'s settings as read
 *   accept?(token)      false: the token is not shown and the writing stops (reason 'model')
 *   token(token, n)     the n-th token arrived: put its text in the text box
 *   show(result)        put its result on screen (the one render path)
 *   finished?(value, reason)  the status line's last words (reason: why it was stopped)
 *   writingChanged?(on), after?(runner)  around the writing
 * options: promptWithoutModel (say "Type some text first" before a model too), focusFromBody
 * (Continue takes the focus back from the body, when the focus was lost while writing).
 */
export class Writer {
  #controls;
  #host;
  #options;
  #writing = null; // { stop: AbortController, reason } of the writing in progress

  constructor(controls, host, options = {}) {
    this.#controls = controls;
    this.#host = host;
    this.#options = options;
    controls.continueButton.addEventListener('click', () => {
      this.start();
    });
    controls.stopButton.addEventListener('click', () => this.stop('stop'));
  }

  get writing() {
    return !!this.#writing;
  }

  /** Stops the writing before its next token (nothing happens when it is not writing). */
  stop(reason = 'stop') {
    if (!this.#writing) return;
    this.#writing.reason = reason;
    this.#writing.stop.abort();
  }

  #settings() {
    const out = {};
    for (const [key] of SETTINGS) {
      const raw = this.#controls.inputs[key].value.trim();
      out[key] = raw === '' ? NaN : Number(raw); // generate() names what it refuses
    }
    return out;
  }

  #setWriting(on) {
    const { continueButton, stopButton } = this.#controls;
    const root = continueButton.getRootNode();
    const hadFocus = root.activeElement;
    continueButton.disabled = on;
    stopButton.disabled = !on;
    this.#host.writingChanged?.(on);
    // the key that pressed one button can press the other next
    if (on && hadFocus === continueButton) stopButton.focus();
    if (!on && (hadFocus === stopButton || (this.#options.focusFromBody && hadFocus === root.body)))
      continueButton.focus();
  }

  async start() {
    const host = this.#host;
    const status = this.#controls.status;
    if (this.#writing) return;
    const runner = host.runner();
    if (!runner && !this.#options.promptWithoutModel) return;
    if (!runner || !host.text()) {
      setText(status, 'Type some text first: the model continues it.');
      return;
    }
    const settings = this.#settings();
    const mine = { stop: new AbortController(), reason: '' };
    this.#writing = mine;
    this.#setWriting(true);
    setText(status, 'Writing…');
    try {
      await runner.idle(); // the result on screen is the text's (a run may be in flight); its rows take the first token
      runner.onRequest = () => this.stop('edited'); // typing, a changed attribute: the reader's text wins
      const prompt = host.text();
      host.begin?.(prompt, settings);
      let count = 0;
      const value = await runner.model.generate(prompt, {
        ...settings,
        ...host.options(),
        signal: mine.stop.signal,
        onToken: async (token) => {
          if (host.accept && !host.accept(token)) {
            this.stop('model');
            return;
          }
          count++;
          host.token(token, count);
          runner.adopt(token.result); // the next keystroke updates this result's rows
          host.show(token.result);
          setText(status, `Writing: ${count} of ${settings.maxTokens} tokens…`);
          await nextFrame(); // one token per frame at most: the reader sees each one
        },
      });
      const n = value.generatedIds.length;
      setText(
        status,
        host.finished?.(value, mine.reason) ??
          `${value.stopped ? 'Stopped after' : 'Wrote'} ${n} token${n === 1 ? '' : 's'}.`,
      );
    } catch (e) {
      setText(status, `The model could not write: ${e.message}`);
    } finally {
      if (runner.onRequest) runner.onRequest = null;
      this.#writing = null;
      this.#setWriting(false);
      host.after?.(runner);
    }
  }
}

/** The element's row of controls: the inputs, Continue, Stop and a status line, on a Writer. */
export class WriteBar {
  #writer;

  /**
   * host: { getRunner(), getText(), setText(text), getResult(), getAblate(), getValueNorms(), show(result) }
   * of the widget: its runner (and through it the model), its text box, its switched-off heads,
   * whether its views need the value sizes (by="value"), and its one render path.
   */
  constructor(doc, host) {
    const mk = (tag, cls, text) => el(doc, tag, cls, text);
    this.el = mk('div', 'hs-write');
    this.el.setAttribute('role', 'group');
    this.el.setAttribute('aria-label', 'Let the model write');
    this.continueButton = mk('button', 'hs-write-btn', 'Continue');
    this.stopButton = mk('button', 'hs-write-btn', 'Stop');
    for (const b of [this.continueButton, this.stopButton]) b.type = 'button';
    this.stopButton.disabled = true;
    this.inputs = {};
    const fields = mk('span', 'hs-write-fields');
    for (const [key, label, value, min, max, step] of SETTINGS) {
      const l = mk('label', null, `${label} `);
      const input = mk('input');
      Object.assign(input, { type: 'number', value: String(value), min: String(min), step: String(step) });
      if (max !== null) input.max = String(max);
      l.appendChild(input);
      fields.appendChild(l);
      this.inputs[key] = input;
    }
    this.status = mk('span', 'hs-write-status');
    this.status.setAttribute('role', 'status');
    this.el.append(this.continueButton, this.stopButton, fields, this.status);
    this.#writer = new Writer(
      { continueButton: this.continueButton, stopButton: this.stopButton, status: this.status, inputs: this.inputs },
      {
        runner: () => host.getRunner(),
        text: () => host.getText(),
        options: () => ({ ablate: host.getAblate(), valueNorms: !!host.getValueNorms?.(), reuse: host.getResult() }),
        token: ({ result }) => host.setText(result.text),
        show: (result) => host.show(result),
      },
    );
  }

  get writing() {
    return this.#writer.writing;
  }

  /** Stops the writing before its next token (nothing happens when it is not writing). */
  stop() {
    this.#writer.stop();
  }

  start() {
    return this.#writer.start();
  }
}

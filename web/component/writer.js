// "Continue" for <headscope-view editable>: a row of controls under the text box that lets the model
// write (generate(): temperature, top-k, top-p, seed, how many tokens), appending each token to the
// text box while the view follows it with the token's result (row updates). Stop, typing, a changed
// attribute or model stop it before the next token, leaving the text and the view of the last token
// shown. The demo page has its own, larger version (web/demo/continue.js).

import { el } from './views/dom.js';

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));

// [id suffix, label, default, min, max, step]: the inputs, as the demo page's
const SETTINGS = [
  ['maxTokens', 'Tokens', 20, 1, 1000, 1],
  ['temperature', 'Temperature', 1, 0, 10, 0.1],
  ['topK', 'Top-k', 0, 0, null, 1],
  ['topP', 'Top-p', 1, 0.01, 1, 0.01],
  ['seed', 'Seed', 0, 0, null, 1],
];

export class WriteBar {
  #host;
  #writing = null; // the AbortController of the writing in progress

  /**
   * host: { getRunner(), getText(), setText(text), getResult(), getAblate(), getValueNorms(), show(result) }
   * of the widget: its runner (and through it the model), its text box, its switched-off heads,
   * whether its views need the value sizes (by="value"), and its one render path.
   */
  constructor(doc, host) {
    this.#host = host;
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
    this.continueButton.addEventListener('click', () => { this.start(); });
    this.stopButton.addEventListener('click', () => this.stop());
  }

  get writing() { return !!this.#writing; }

  /** Stops the writing before its next token (nothing happens when it is not writing). */
  stop() {
    this.#writing?.abort();
  }

  #settings() {
    const out = {};
    for (const [key] of SETTINGS) {
      const raw = this.inputs[key].value.trim();
      out[key] = raw === '' ? NaN : Number(raw); // generate() names what it refuses
    }
    return out;
  }

  #setWriting(on) {
    const hadFocus = this.el.getRootNode().activeElement;
    this.continueButton.disabled = on;
    this.stopButton.disabled = !on;
    // the key that pressed one button can press the other next
    if (on && hadFocus === this.continueButton) this.stopButton.focus();
    if (!on && hadFocus === this.stopButton) this.continueButton.focus();
  }

  async start() {
    const host = this.#host;
    const runner = host.getRunner();
    if (this.#writing || !runner) return;
    const text = host.getText();
    if (!text) { this.status.textContent = 'Type some text first: the model continues it.'; return; }
    const settings = this.#settings();
    const stop = new AbortController();
    this.#writing = stop;
    this.#setWriting(true);
    this.status.textContent = 'Writing…';
    try {
      await runner.idle(); // the result on screen is the text's; its rows take the first token
      runner.onRequest = () => stop.abort(); // typing, a changed attribute: the reader's text wins
      let count = 0;
      const value = await runner.model.generate(text, {
        ...settings, ablate: host.getAblate(), valueNorms: !!host.getValueNorms?.(), reuse: host.getResult(), signal: stop.signal,
        onToken: async ({ result }) => {
          count++;
          host.setText(result.text);
          runner.adopt(result); // the next keystroke updates this result's rows
          host.show(result);
          this.status.textContent = `Writing: ${count} of ${settings.maxTokens} tokens…`;
          await nextFrame(); // one token per frame at most: the reader sees each one
        },
      });
      const n = value.generatedIds.length;
      this.status.textContent = `${value.stopped ? 'Stopped after' : 'Wrote'} ${n} token${n === 1 ? '' : 's'}.`;
    } catch (e) {
      this.status.textContent = `The model could not write: ${e.message}`;
    } finally {
      if (runner.onRequest) runner.onRequest = null;
      this.#writing = null;
      this.#setWriting(false);
    }
  }
}

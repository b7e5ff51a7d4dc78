// "Let the model write" on the demo page: Continue appends tokens the model draws (temperature,
// top-k, top-p, seed, how many) to the text, one at a time, and every view follows each token with
// the run result of the text so far (generate()'s onToken: only the new attention rows move).
// Stop, editing the text, switching heads or models stop it before the next token; the text, the
// views and the result the next keystroke updates are then those of the last token shown.
//
// What it keeps: the ranges of the text the model wrote (the token strip marks their tokens, and
// edits elsewhere keep them), and the last token's draw (the next-token panel shows the
// distribution it came from, until the text changes).

import { quoteToken } from '../../component/headscope-view.js';

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; }; // text, never markup

/** The settings as the reader wrote them; a value the API refuses comes back as its Error. */
function readSettings($) {
  const number = (id) => ($(id).value.trim() === '' ? NaN : Number($(id).value));
  return {
    maxTokens: number('write-tokens'),
    temperature: number('write-temperature'),
    topK: number('write-topk'),
    topP: number('write-topp'),
    seed: number('write-seed'),
  };
}

// The ranges of `before` kept in `after`: the common start stays, the common end moves with the edit.
function keepRanges(ranges, before, after) {
  let a = 0;
  while (a < before.length && a < after.length && before[a] === after[a]) a++;
  let b = 0;
  while (b < before.length - a && b < after.length - a && before[before.length - 1 - b] === after[after.length - 1 - b]) b++;
  const tail = before.length - b;
  const shift = after.length - before.length;
  const out = [];
  for (const [from, to] of ranges) {
    if (from < a) out.push([from, Math.min(to, a)]);
    if (to > tail) out.push([Math.max(from, tail) + shift, to + shift]);
  }
  return out.filter(([from, to]) => to > from);
}

function settingsWords({ temperature, topK, topP }) {
  if (temperature === 0) return 'temperature 0: always the most likely token';
  const parts = [`temperature ${temperature}`];
  if (topK > 0) parts.push(`top-k ${topK}`);
  if (topP < 1) parts.push(`top-p ${topP}`);
  return parts.join(', ');
}

/**
 * Wires the controls (ids write-*) to the page. getModel/getRunner/getResult: the page's current
 * model, runner and result on screen; show(result): put a result on screen (the page's one render path); announce(text): the
 * page's live region.
 */
export function installContinue({ $, state, textBox, getModel, getRunner, getResult, show, announce }) {
  const continueButton = $('write-continue');
  const stopButton = $('write-stop');
  const status = $('write-status');
  const caption = $('next-drawn');
  let writing = null; // { stop: AbortController, model, count, prompt }
  let written = [];   // [start, end) ranges of state.text the model wrote
  let shownText = state.text;
  let last = null;    // { result, drawn, settings }: the last token shown

  function setWriting(on) {
    const hadFocus = document.activeElement;
    continueButton.disabled = on;
    stopButton.disabled = !on;
    document.body.dataset.writing = on ? 'true' : 'false';
    // the key that pressed one button can press the other next
    if (on && hadFocus === continueButton) stopButton.focus();
    if (!on && (hadFocus === stopButton || hadFocus === document.body)) continueButton.focus();
  }

  function stop(reason) {
    if (!writing) return;
    writing.reason = reason;
    writing.stop.abort();
  }

  async function start() {
    if (writing) return;
    const model = getModel();
    const runner = getRunner();
    if (!model || !runner || !state.text) {
      setText(status, 'Type some text first: the model continues it.');
      return;
    }
    const settings = readSettings($);
    writing = { stop: new AbortController(), model, count: 0, reason: '' };
    const mine = writing;
    setWriting(true);
    setText(status, 'Writing…');
    try {
      // the result on screen is the text's (a run may be in flight), and its rows take the first token
      await runner.idle();
      runner.onRequest = () => stop('edited');
      const prompt = state.text;
      const from = prompt.length;
      // this writing's range grows token by token; one that continues the last writing extends it
      const before = written.filter(([, to]) => to < from);
      const joined = written.find(([, to]) => to === from)?.[0] ?? from;
      const value = await model.generate(prompt, {
        ...settings, ablate: state.ablate, valueNorms: state.by === 'value', reuse: getResult(), signal: mine.stop.signal,
        onToken: async ({ id, token, prob, distribution, ms, result }) => {
          if (getModel() !== model) { stop('model'); return; }
          result.runMs = ms; // the engine's time for the token, as the stats line says of a run
          mine.count++;
          written = [...before, [joined, result.text.length]];
          last = { result, drawn: { id, token, prob, distribution }, settings };
          // the text box follows, keeping the reader's caret where it was unless it was at the end
          const { selectionStart: s0, selectionEnd: s1 } = textBox;
          const atEnd = s0 === textBox.value.length;
          state.text = shownText = result.text;
          textBox.value = result.text;
          if (!atEnd) textBox.setSelectionRange(s0, s1);
          runner.adopt(result); // the next keystroke updates this result's rows
          show(result);
          setText(status, `Writing: ${mine.count} of ${settings.maxTokens} tokens…`);
          await nextFrame(); // one token per frame at most: the reader sees each one
        },
      });
      const n = value.generatedIds.length;
      const words = `${n} token${n === 1 ? '' : 's'}`;
      const why = { edited: ' when the text or the heads changed', model: ' when the model changed' }[mine.reason] ?? '';
      const message = value.stopped ? `Stopped after ${words}${why}.` : `Wrote ${words} (marked in the token strip).`;
      setText(status, message);
      announce(message);
    } catch (e) {
      setText(status, `The model could not write: ${e.message}`);
    } finally {
      if (runner.onRequest) runner.onRequest = null;
      writing = null;
      setWriting(false);
      // "weight × value size" was picked while the model wrote: the last token's result has no value
      // sizes, so the text runs once more for them (unless a run is on its way: an edit stopped the writing)
      const shown = getResult();
      if (state.by === 'value' && shown && !shown.valueNorms && getModel() === model && getRunner() === runner && !runner.busy && !runner.pending) runner.request(state.text);
    }
  }

  continueButton.addEventListener('click', () => { start(); });
  stopButton.addEventListener('click', () => stop('stop'));
  // an edit stops the writing (through the runner's request) and moves the marks with the text
  textBox.addEventListener('input', () => {
    written = keepRanges(written, shownText, textBox.value);
    shownText = textBox.value;
  });

  return {
    stop,
    get writing() { return !!writing; },
    /** What the views show of the writing for `result`: the written ranges, the last draw. */
    update(result) {
      const drawn = last && last.result === result ? last.drawn : null;
      caption.hidden = !drawn;
      if (drawn) {
        const kept = drawn.distribution.ids.length;
        setText(caption, `The last token, ${quoteToken(drawn.token)}, was drawn from these: the model's probabilities after ${settingsWords(last.settings)} (${kept} token${kept === 1 ? '' : 's'} could be drawn).`);
      }
      return { written: result.text === shownText ? written : [], drawn };
    },
  };
}

// "Let the model write" on the demo page: Continue appends tokens the model draws (temperature,
// top-k, top-p, seed, how many) to the text, one at a time, and every view follows each token with
// the run result of the text so far (generate()'s onToken: only the new attention rows move).
// Stop, editing the text, switching heads or models stop it before the next token; the text, the
// views and the result the next keystroke updates are then those of the last token shown.
//
// What it keeps: the ranges of the text the model wrote (the token strip marks their tokens, and
// edits elsewhere keep them), and the last token's draw (the next-token panel shows the
// distribution it came from, until the text changes).
// The writing itself (Continue, Stop, the status line, a token a frame) is the components' one
// Writer (web/component/writer.js), on this page's controls.

import { quoteToken, Writer } from '../../component/headscope-view.js';

const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
}; // text, never markup

// The ranges of `before` kept in `after`: the common start stays, the common end moves with the edit.
function keepRanges(ranges, before, after) {
  let a = 0;
  while (a < before.length && a < after.length && before[a] === after[a]) a++;
  let b = 0;
  while (b < before.length - a && b < after.length - a && before[before.length - 1 - b] === after[after.length - 1 - b])
    b++;
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
  const caption = $('next-drawn');
  let written = []; // [start, end) ranges of state.text the model wrote
  let shownText = state.text;
  let last = null; // { result, drawn, settings }: the last token shown
  let model = null; // the model writing
  let current = null; // its settings
  let before = []; // the written ranges this writing keeps as they are
  let joined = 0; // where this writing's range starts (one that continues the last writing extends it)
  const input = (id) => $(`write-${id}`);
  const writer = new Writer(
    {
      continueButton: $('write-continue'),
      stopButton: $('write-stop'),
      status: $('write-status'),
      inputs: {
        maxTokens: input('tokens'),
        temperature: input('temperature'),
        topK: input('topk'),
        topP: input('topp'),
        seed: input('seed'),
      },
    },
    {
      runner: () => {
        model = getModel();
        return model ? getRunner() : null;
      },
      text: () => state.text,
      options: () => ({ ablate: state.ablate, valueNorms: state.by === 'value', reuse: getResult() }),
      begin(prompt, settings) {
        current = settings;
        const from = prompt.length;
        before = written.filter(([, to]) => to < from);
        joined = written.find(([, to]) => to === from)?.[0] ?? from;
      },
      accept: () => getModel() === model,
      token({ id, token, prob, distribution, ms, result }) {
        result.runMs = ms; // the engine's time for the token, as the stats line says of a run
        written = [...before, [joined, result.text.length]];
        last = { result, drawn: { id, token, prob, distribution }, settings: current };
        // the text box follows, keeping the reader's caret where it was unless it was at the end
        const { selectionStart: s0, selectionEnd: s1 } = textBox;
        const atEnd = s0 === textBox.value.length;
        state.text = shownText = result.text;
        textBox.value = result.text;
        if (!atEnd) textBox.setSelectionRange(s0, s1);
      },
      show,
      finished(value, reason) {
        const n = value.generatedIds.length;
        const words = `${n} token${n === 1 ? '' : 's'}`;
        const why = { edited: ' when the text or the heads changed', model: ' when the model changed' }[reason] ?? '';
        const message = value.stopped ? `Stopped after ${words}${why}.` : `Wrote ${words} (marked in the token strip).`;
        announce(message);
        return message;
      },
      writingChanged: (on) => {
        document.body.dataset.writing = on ? 'true' : 'false';
      },
      // "weight × value size" was picked while the model wrote: the last token's result has no value
      // sizes, so the text runs once more for them (unless a run is on its way: an edit stopped the writing)
      after(runner) {
        const shown = getResult();
        if (
          state.by === 'value' &&
          shown &&
          !shown.valueNorms &&
          getModel() === model &&
          getRunner() === runner &&
          !runner.busy &&
          !runner.pending
        )
          runner.request(state.text);
      },
    },
    { promptWithoutModel: true, focusFromBody: true },
  );

  // an edit stops the writing (through the runner's request) and moves the marks with the text
  textBox.addEventListener('input', () => {
    written = keepRanges(written, shownText, textBox.value);
    shownText = textBox.value;
  });

  return {
    stop: (reason) => writer.stop(reason),
    get writing() {
      return writer.writing;
    },
    /** What the views show of the writing for `result`: the written ranges, the last draw. */
    update(result) {
      const drawn = last && last.result === result ? last.drawn : null;
      caption.hidden = !drawn;
      if (drawn) {
        const kept = drawn.distribution.ids.length;
        setText(
          caption,
          `The last token, ${quoteToken(drawn.token)}, was drawn from these: the model's probabilities after ${settingsWords(last.settings)} (${kept} token${kept === 1 ? '' : 's'} could be drawn).`,
        );
      }
      return { written: result.text === shownText ? written : [], drawn };
    },
  };
}

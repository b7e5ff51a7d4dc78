// What HeadscopeModel.generate() needs besides the engine: its options checked with messages naming
// the range, and the text being written kept as bytes. A generated token is a piece of UTF-8 that may
// end inside a character (GPT-2's byte-level tokens split emoji and CJK characters), which a JS
// string cannot hold: the sequence is kept as bytes and decoded, with every token's span mapped from
// bytes to UTF-16 indices of the decoded text. Used on both sides of the Worker. Also every run's
// text as UTF-8 (headscope.js): lone surrogates made well-formed, the engine's byte spans mapped to
// string indices.

import { checked } from './wasm.js';
import { sharedPrefixLength } from './result.js';

// Lone UTF-16 surrogates cannot be encoded as UTF-8; they become U+FFFD (same length, so string
// indices are unchanged).
export function toWellFormed(text) {
  if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
  return typeof text.toWellFormed === 'function'
    ? text.toWellFormed()
    : text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

// Maps UTF-8 byte offsets of `text` to UTF-16 indices. A byte inside a character maps to the
// character's start (for starts) or end (for ends), so a token that splits an emoji still covers it.
// A text of ASCII alone (most typing) has one byte a character: the maps are the identity, not two
// arrays of a number a byte built at every run (8 ms a keystroke at 8,000 tokens).
export function byteToIndexMaps(text) {
  if (ASCII_ONLY.test(text)) return { start: (b) => b, end: (b) => b };
  const starts = []; // byte offset -> index of the character containing it
  const ends = [];
  let index = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    const nbytes = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (let b = 0; b < nbytes; b++) {
      starts.push(index);
      ends.push(index + ch.length);
    }
    index += ch.length;
  }
  starts.push(index);
  ends.push(index);
  return { start: (b) => starts[b], end: (b) => (b === 0 ? 0 : ends[b - 1]) };
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** The most tokens one generate() call writes (the CLI's limit too). */
export const MAX_GENERATE_TOKENS = 100000;

const describe = (v) => (typeof v === 'number' ? String(v) : v === null ? 'null' : typeof v);

/**
 * generate()'s options with their defaults, or an Error naming the option and its range. The engine
 * checks temperature, top-k and top-p too; checking here first means a fractional topK is refused
 * instead of truncated by embind, and the messages use the option names of this API.
 */
export function generateOptions(options = {}) {
  const { maxTokens, temperature = 1, topK = 0, topP = 1, seed = 0, ablate = [], valueNorms = false } = options;
  if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > MAX_GENERATE_TOKENS)
    throw new Error(`maxTokens must be a whole number within [1, ${MAX_GENERATE_TOKENS}], got ${describe(maxTokens)}`);
  if (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 1e4))
    throw new Error(
      `temperature must be a number within [0, 10000] (0: always the most likely token), got ${describe(temperature)}`,
    );
  if (!Number.isInteger(topK) || topK < 0 || topK > 2 ** 31 - 1)
    throw new Error(`topK must be a whole number >= 0 (0: off), got ${describe(topK)}`);
  if (typeof topP !== 'number' || !(topP > 0 && topP <= 1))
    throw new Error(`topP must be a number within (0, 1] (1: off), got ${describe(topP)}`);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(`seed must be a whole number within [0, 2^53 - 1], got ${describe(seed)}`);
  if (!Array.isArray(ablate)) throw new Error('ablate must be an array of [layer, head] pairs');
  for (const pair of ablate)
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(Number.isInteger))
      throw new Error(`ablate entries must be [layer, head] pairs of integers, got ${JSON.stringify(pair)}`);
  return { maxTokens, temperature, topK, topP, seed, ablate: ablate.map(([l, h]) => [l, h]), valueNorms: !!valueNorms };
}

/**
 * Decodes UTF-8 as TextDecoder does (the WHATWG decoder: each maximal invalid subsequence, and a
 * character cut off at the end, becomes one U+FFFD) and maps byte offsets to UTF-16 indices of the
 * result: start(b) is the index where the character holding byte b begins (the text's length for b
 * at the end), end(b) the index where the character holding byte b - 1 ends. A token that holds part
 * of a character thus covers the whole of it, as run()'s spans do.
 */
export function decodeWithSpans(bytes) {
  const n = bytes.length;
  const starts = new Int32Array(n + 1);
  const ends = new Int32Array(n + 1);
  const parts = [];
  let length = 0; // UTF-16 units emitted
  const emit = (from, to, cp) => {
    const units = cp > 0xffff ? 2 : 1;
    for (let b = from; b < to; b++) {
      starts[b] = length;
      ends[b] = length + units;
    }
    parts.push(cp);
    length += units;
  };
  let i = 0;
  while (i < n) {
    const b0 = bytes[i];
    let need = 0;
    let cp = 0;
    let lower = 0x80;
    let upper = 0xbf;
    if (b0 < 0x80) {
      emit(i, i + 1, b0);
      i++;
      continue;
    }
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      need = 1;
      cp = b0 & 0x1f;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      need = 2;
      cp = b0 & 0x0f;
      if (b0 === 0xe0) lower = 0xa0;
      if (b0 === 0xed) upper = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      need = 3;
      cp = b0 & 0x07;
      if (b0 === 0xf0) lower = 0x90;
      if (b0 === 0xf4) upper = 0x8f;
    } else {
      emit(i, i + 1, 0xfffd); // a byte that cannot start a character
      i++;
      continue;
    }
    let j = i + 1;
    let seen = 0;
    while (seen < need && j < n && bytes[j] >= lower && bytes[j] <= upper) {
      cp = (cp << 6) | (bytes[j] & 0x3f);
      lower = 0x80;
      upper = 0xbf;
      j++;
      seen++;
    }
    // complete: the character; else the bytes so far are one U+FFFD and the next byte starts afresh
    emit(i, j, seen === need ? cp : 0xfffd);
    i = j;
  }
  starts[n] = length;
  ends[n] = length;
  let text = '';
  for (let k = 0; k < parts.length; k += 4096) text += String.fromCodePoint(...parts.slice(k, k + 4096));
  return { text, start: (b) => starts[b], end: (b) => (b === 0 ? 0 : ends[b - 1]) };
}

/**
 * The sequence being written: the prompt's tokens, then each generated token, as bytes. text and
 * tokens() decode it (cached until the next token).
 */
export class WrittenText {
  #bytes;
  #length;
  #byteEnds = [];
  #ids = [];
  #texts = [];
  #decoded = null;

  /** promptBytes: the prompt's UTF-8; promptTokens: its tokens ({ id, text, byteEnd }), in order. */
  constructor(promptBytes, promptTokens) {
    this.#bytes = new Uint8Array(Math.max(64, promptBytes.length * 2));
    this.#bytes.set(promptBytes);
    this.#length = promptBytes.length;
    for (const t of promptTokens) this.#push(t.id, t.text, t.byteEnd);
    this.promptTokens = promptTokens.length;
  }

  #push(id, text, byteEnd) {
    this.#ids.push(id);
    this.#texts.push(text);
    this.#byteEnds.push(byteEnd);
  }

  /** Appends a generated token: its id, display text and bytes. */
  append(id, text, bytes) {
    if (this.#length + bytes.length > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#length + bytes.length));
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
    this.#bytes.set(bytes, this.#length);
    this.#length += bytes.length;
    this.#push(id, text, this.#length);
    this.#decoded = null;
  }

  /** Removes the last token (one generated: the prompt's stay). */
  pop() {
    if (this.#ids.length <= this.promptTokens) return;
    this.#ids.pop();
    this.#texts.pop();
    this.#byteEnds.pop();
    this.#length = this.#byteEnds.length ? this.#byteEnds[this.#byteEnds.length - 1] : 0;
    this.#decoded = null;
  }

  get length() {
    return this.#ids.length;
  }
  get ids() {
    return this.#ids;
  }
  get bytes() {
    return this.#bytes.subarray(0, this.#length);
  }

  #decode() {
    return this.#decoded ?? (this.#decoded = decodeWithSpans(this.bytes));
  }

  /** The whole text so far (U+FFFD where it ends inside a character, or holds invalid UTF-8). */
  get text() {
    return this.#decode().text;
  }

  /** Tokens [from, to) as run()'s Token objects, with spans into `text`. */
  tokens(from = 0, to = this.length) {
    const { start, end } = this.#decode();
    const out = new Array(to - from);
    for (let i = from; i < to; i++) {
      const b0 = i ? this.#byteEnds[i - 1] : 0;
      out[i - from] = { text: this.#texts[i], id: this.#ids[i], start: start(b0), end: end(this.#byteEnds[i]) };
    }
    return out;
  }
}

// measureHeads(), generate(): how long a chunk of steps lasts before the page may paint and read a
// cancel (a frame at 60 Hz minus room for the page's work; a single model run may take longer)
export const CHUNK_MS = 12;
export const performanceNow = () => globalThis.performance.now();
// a macrotask, so that the page can paint and events (a click on Cancel) arrive
export const yieldToEventLoop = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * HeadscopeModel.generateData()'s loop: up to o.maxTokens tokens drawn by the engine's generation
 * `gen` into `written`, with onStep (as generateData()'s) after each. `model` is what it needs of the
 * model: live() (its handle; throws once disposed), take(restore) (before each draw: calls restore()
 * when another run took the engine since the last token), stepData(h, ids, reusedTokens, previous)
 * (a step's runData()-like data) and tokenText(id). Returns { stopped, windowIds }, windowIds the
 * engine's last run.
 */
export async function writeTokens(core, gen, written, o, options, previous, onStep, model) {
  const { signal = null } = options;
  let h = model.live();
  let stopped = false;
  let windowIds = h.tokenIds(); // the engine's last run: what the next step reuses of it
  let lastYield = performanceNow();
  for (let i = 0; i < o.maxTokens; i++) {
    if (signal?.aborted) {
      stopped = true;
      break;
    }
    h = model.live(); // disposed meanwhile: the generation refers to the model, so it stops here
    model.take(() => {
      checked(core, gen.restore());
      windowIds = h.tokenIds();
    });
    const t0 = performanceNow();
    const t = checked(core, gen.next());
    written.append(t.id, t.token, t.bytes);
    const ids = h.tokenIds();
    if (onStep) {
      const data = model.stepData(h, ids, sharedPrefixLength(windowIds, ids), previous);
      previous = { ids, stride: data.stride };
      const top = Array.from(t.ids.subarray(0, 10), (id, k) => ({
        id,
        token: model.tokenText(id),
        prob: t.probs[k],
      }));
      const ms = performanceNow() - t0; // the draw, the model's step and the result's copy
      const step = {
        index: i,
        id: t.id,
        token: t.token,
        prob: t.prob,
        distribution: { ids: t.ids, probs: t.probs, top },
        ms,
        data,
      };
      if ((await onStep(step)) === false) {
        written.pop();
        stopped = true;
        break;
      }
    }
    windowIds = ids;
    // a page paints and reads a click on Stop between tokens (every token when it hears of each)
    if (i + 1 < o.maxTokens && (onStep || performanceNow() - lastYield >= CHUNK_MS)) {
      await yieldToEventLoop();
      await options.between?.(); // the Worker answers queued requests here
      lastYield = performanceNow();
    }
  }
  return { stopped, windowIds };
}

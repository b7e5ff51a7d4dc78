// HeadscopeModel.inspectHead(), logitAttribution(), explainScore() and circuits(): what a head
// computes, what pushed a logit, why a head attends, and which heads work together (the engine's
// inspect, logit_attribution, explain_score and circuits, cpp/include/headscope/model.hpp and
// explain.hpp, where every number is defined). Published as explain.js; the Worker's host calls them
// as the page thread does.
import { checked } from './wasm.js';
import { flatAblate, engineTokens } from './result.js';
import { byteToIndexMaps } from './generation.js';

/** Throws unless every [name, value] of `pairs` is an integer: embind would truncate 1.5 or refuse '1' with a TypeError of its own. */
export function integers(pairs) {
  for (const [name, v] of pairs)
    if (!Number.isInteger(v))
      throw new Error(`${name} must be an integer, got ${typeof v === 'number' ? v : typeof v}`);
}

/**
 * HeadscopeModel.inspectHead()'s work for the model handle `h` of a model of `config`: runs `text`
 * (well-formed) with `ablate`'s heads off and reads head (layer, head)'s insides, with the run's
 * tokens. `took()` is called before the engine runs: the inspect run takes its cache.
 */
export function inspectOf(core, h, text, layer, head, ablate, config, took) {
  integers([
    ['layer', layer],
    ['head', head],
  ]);
  const flat = flatAblate(ablate);
  took();
  const inside = checked(core, h.inspect(text, layer, head, flat));
  // the tokens of this run, without any attention rows (rows [T, T) of a T-wide block: none)
  const T = inside.T;
  const out = checked(core, h.results(0, false, T, 0, T, 0));
  const tokens = engineTokens(out, T, byteToIndexMaps(text));
  // what the explanation names: GPT-2 layer-norms the input and adds learned positions to it; the
  // Llama family RMS-norms it and rotates q and k by their positions (the q and k here are rotated)
  const llama = config.modelType !== 'gpt2';
  return {
    ...inside,
    text,
    tokens,
    ablate: ablate.map(([l, hd]) => [l, hd]),
    norm: llama ? 'RMSNorm' : 'layer norm',
    rotary: llama,
  };
}

/**
 * HeadscopeModel.logitAttribution()'s split, of the last run the engine holds (`lastRun`: its text
 * and flat switched-off heads), at `position` for vocabulary entry `token`.
 */
export function attributionOf(core, h, position, token, config, lastRun) {
  const a = checked(core, h.logitAttribution(position, token));
  const { nLayer, nHead } = config;
  const { text, flat } = lastRun;
  const ablate = [];
  for (let i = 0; i < flat.length; i += 2) ablate.push([flat[i], flat[i + 1]]);
  // the final norm the parts are read through: GPT-2's LayerNorm (centred, with a bias) or the Llama family's RMSNorm
  const norm = config.modelType === 'gpt2' ? 'LayerNorm' : 'RMSNorm';
  return { ...a, nLayer, nHead, text, ablate, norm };
}

const whole = (name, v) => {
  if (!Number.isInteger(v) || v < 0)
    throw new Error(`${name} must be a whole number >= 0, got ${typeof v === 'number' ? v : typeof v}`);
};

/**
 * HeadscopeModel.explainScore()'s work for the model handle `h`: runs `text` (with `ablate`'s heads
 * off; the engine's cache makes a run of the text on screen free) and splits the score. `model`:
 * run(text, flat) runs the text as the model's run() does (it becomes the last run), tokenText(id).
 */
export function explainOf(core, h, text, layer, head, query, key, options, model) {
  if (typeof text !== 'string') throw new Error(`text must be a string, got ${text === null ? 'null' : typeof text}`);
  for (const [name, v] of [
    ['layer', layer],
    ['head', head],
    ['query', query],
    ['key', key],
  ])
    whole(name, v);
  const { ablate = [], versus = 'mean', token = null } = options ?? {};
  if (versus !== 'mean') whole('versus', versus);
  if (token !== null) whole('token', token);
  const flat = flatAblate(ablate);
  const tokens = model.run(text, flat);
  const r = checked(core, core.explainScore(h, layer, head, query, key, versus === 'mean' ? -1 : versus, token ?? -1));
  const tok = (id) => ({ id, text: model.tokenText(id) });
  return {
    text,
    ablate: ablate.map(([l, hd]) => [l, hd]),
    layer: r.layer,
    head: r.head,
    query: r.query,
    key: r.key,
    queryToken: tok(tokens[r.query]),
    keyToken: tok(tokens[r.key]),
    components: r.components,
    score: r.score,
    table: r.table,
    versus: r.versus < 0 ? 'mean' : r.versus,
    contrast: r.contrast,
    value: { token: tok(r.token), byToken: r.valueByToken, byPart: r.valueByPart, total: r.valueTotal },
  };
}

/** HeadscopeModel.circuits()'s work: composition and copying scores from the weights alone. */
export function circuitsOf(core, h, { seeds = 16 } = {}) {
  if (!Number.isInteger(seeds) || seeds < 1)
    throw new Error(`seeds must be a whole number >= 1, got ${typeof seeds === 'number' ? seeds : typeof seeds}`);
  const r = checked(core, core.circuits(h, seeds));
  return {
    nLayer: r.nLayer,
    nHead: r.nHead,
    copying: r.copying,
    composition: { q: r.q, k: r.k, v: r.v },
    baseline: { q: r.baselineQ, k: r.baselineK, v: r.baselineV },
    seeds: r.seeds,
  };
}

/** The typed arrays of an explainScore() or circuits() value, for a transfer between threads. */
export function explainBuffers(x) {
  return x.composition
    ? [x.copying.buffer, x.composition.q.buffer, x.composition.k.buffer, x.composition.v.buffer]
    : [x.table.buffer, x.contrast.buffer, x.value.byToken.buffer, x.value.byPart.buffer];
}

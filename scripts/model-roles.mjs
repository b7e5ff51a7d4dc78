#!/usr/bin/env node
// Every role number of a model card, computed from the exported files through the engine (the npm
// package's API in Node, float32 WebAssembly), not through PyTorch:
//
//   node scripts/model-roles.mjs web/models/headscope-base [--json] [--lists N] [--text FILE]
//
//   previous token   mean over t >= 1 of A[t][t-1], on 128-token windows of --text (default: the
//                    English paragraph below). The card measures it on held-out validation text,
//                    which the repository does not ship, so the two differ by the text (~0.05).
//   induction        prefix matching (roles.json induction_probe): N seeded lists of 20 common words
//                    that are single tokens, each followed by itself; mean attention from each token
//                    of the repeat to the token after its first occurrence; averaged over the lists.
//                    The card draws its lists with numpy, this script with its own seeded generator
//                    from the same words, so the two differ by which lists were drawn.
//   copy accuracy    the same lists: share of repeat positions whose most likely next token is the
//                    word that followed in the first copy.
//   verb to subject  on the card's probe sentences (card.roles.probe_sentences): attention from the
//                    main verb's last token to the subject's tokens / uniform share; averaged.
//                    Same sentences, same (F16) weights: it should equal the card's up to arithmetic.
// Bits per byte stays PyTorch-only (scripts/train/head_metrics.py): it needs the validation text.
//
// Needs dist/ (scripts/build-package.sh). Prints a summary, or with --json the whole result,
// including the card's numbers beside the engine's (`card`) when the folder has a new-format card.
import { readFileSync, existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const ROOT = new URL('../', import.meta.url);

export const PARAGRAPH =
  'The old house at the end of the street had been empty for many years. Children walked past it on their way to school, and some of them said that a ghost lived in the attic. ' +
  'In the spring of that year, a young family bought the house. The father was a carpenter, and he spent the summer repairing the roof, the windows and the long front porch. ' +
  'His wife planted a garden behind the kitchen, where tomatoes, beans and sunflowers soon grew taller than their two children. ' +
  'By the autumn the neighbours had stopped talking about ghosts. They talked instead about the new bread that came out of the oven every Saturday morning, and about the music that could be heard from the open windows in the evening.';

function best(grid) {
  let b = null;
  grid.forEach((row, l) =>
    row.forEach((s, h) => {
      if (!b || s > b.score) b = { layer: l, head: h, score: s };
    }),
  );
  return b;
}

/** Mean previous-token score [layer][head] over windows of at most nPositions tokens of `text`. */
async function previousTokenScores(model, analysis, text) {
  const T = model.info.config.nPositions;
  const toks = model.tokenize(text);
  const windows = [];
  for (let s = 0; s < toks.length; s += T) {
    const e = Math.min(toks.length, s + T) - 1;
    if (e - s >= 16) windows.push(text.slice(toks[s].start, toks[e].end));
  }
  if (!windows.length) windows.push(text);
  let sum = null;
  for (const w of windows) {
    const g = analysis.allHeadScores(model.run(w, { topK: 1 })).map((row) => row.map((x) => x.previous));
    sum = sum ? sum.map((row, l) => row.map((v, h) => v + g[l][h])) : g;
  }
  return { scores: sum.map((row) => row.map((v) => v / windows.length)), windows: windows.length };
}

/**
 * The role numbers of the model in `folder` (a path or file: URL), through the engine.
 * Returns { model, thresholds, best, counts, copy_accuracy, heads, method, card } (card: the
 * card.json's per-head numbers and, when it has them (roles: true), its roles; null without card.json).
 */
export async function modelRoles(folder, { lists, text = PARAGRAPH, seed = 1 } = {}) {
  const dir = folder instanceof URL ? folder : pathToFileURL(resolve(folder) + '/');
  const { loadModel } = await import(new URL('dist/headscope.js', ROOT));
  const analysis = await import(new URL('dist/analysis.js', ROOT));
  const cardFile = new URL('card.json', dir);
  const card = existsSync(cardFile) ? JSON.parse(readFileSync(cardFile, 'utf8')) : null;
  const thresholds = Object.fromEntries(
    analysis.ROLES_TABLE.filter((r) => r.where.includes('card')).map((r) => [r.name, r.threshold]),
  );
  const model = await loadModel(dir);
  try {
    const prev = await previousTokenScores(model, analysis, text);
    const ind = await analysis.inductionScores(model, { lists, seed, copy: true, perList: true });
    const sentences = card?.roles?.probe_sentences || [];
    const v2s = await analysis.verbSubjectScores(model, sentences);
    const { nLayer, nHead } = model.info.config;
    const heads = [];
    for (let l = 0; l < nLayer; l++) {
      for (let h = 0; h < nHead; h++) {
        heads.push({
          layer: l,
          head: h,
          prev_token: prev.scores[l][h],
          induction: ind.scores[l][h],
          // the spread of this head's score from list to list (for the tolerance against the card)
          induction_list_sd: ind.listSd[l][h],
          verb_to_subject: v2s.scores ? v2s.scores[l][h] : null,
          verb_to_subject_weight: v2s.weights ? v2s.weights[l][h] : null,
        });
      }
    }
    const count = (key, th) => heads.filter((x) => x[key] !== null && x[key] >= th).length;
    return {
      model: model.info.name,
      thresholds: {
        prev_token: thresholds.previous,
        induction: thresholds.induction,
        verb_to_subject: thresholds.verb_to_subject,
      },
      best: {
        prev_token: best(prev.scores),
        induction: best(ind.scores),
        verb_to_subject: v2s.scores ? best(v2s.scores) : null,
      },
      counts: {
        prev_token: count('prev_token', thresholds.previous),
        induction: count('induction', thresholds.induction),
        verb_to_subject: v2s.scores ? count('verb_to_subject', thresholds.verb_to_subject) : null,
      },
      copy_accuracy: ind.copyAccuracy,
      heads,
      method: {
        engine: `headscope ${model.info.simd.arch}, float32 WebAssembly`,
        prev_token: `${prev.windows} window(s) of at most ${model.info.config.nPositions} tokens of the given text (not the card's validation text)`,
        induction: `${ind.lists.length} lists of ${analysis.INDUCTION_PROBE.listLength} common one-token words (roles.json induction_probe, seed ${seed}), each followed by itself`,
        induction_lists: ind.lists.length,
        copy_accuracy:
          'same lists: argmax next token at repeat positions 0..n-2 equals the word that followed in the first copy',
        verb_to_subject: `${v2s.sentences} of the card's ${sentences.length} probe sentences`,
        bits_per_byte: 'not computed here: PyTorch only (scripts/train/head_metrics.py), on the validation text',
      },
      // the card's numbers beside them; an old-format card has per-head previous-token scores only
      card: card
        ? {
            roles: !!card.roles,
            ...(card.roles
              ? {
                  thresholds: card.roles.thresholds,
                  best: card.roles.best,
                  counts: card.roles.counts,
                  copy_accuracy: card.roles.copy_accuracy,
                  induction_lists: Number(/(\d+) seeded lists/.exec(card.roles.method?.induction || '')?.[1]) || null,
                }
              : {}),
            heads: (card.heads || []).map((x) => ({
              layer: x.layer,
              head: x.head,
              prev_token: x.prev_token,
              induction: x.induction,
              verb_to_subject: x.verb_to_subject,
            })),
          }
        : null,
    };
  } finally {
    model.dispose();
  }
}

function fmtBest(b, digits = 3) {
  return b ? `L${b.layer}H${b.head} ${b.score.toFixed(digits)}` : '-';
}

async function main(argv) {
  const args = argv.slice(2);
  const folder = args.find((a, i) => !a.startsWith('--') && !['--lists', '--text'].includes(args[i - 1]));
  if (!folder) {
    console.error('usage: node scripts/model-roles.mjs MODEL_FOLDER [--json] [--lists N] [--text FILE]');
    process.exit(2);
  }
  const opt = (name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const lists = opt('--lists') ? Number(opt('--lists')) : undefined;
  const text = opt('--text') ? readFileSync(opt('--text'), 'utf8') : undefined;
  const r = await modelRoles(folder, { lists, text });
  if (args.includes('--json')) {
    console.log(JSON.stringify(r, null, 1));
    return;
  }
  const c = r.card?.roles ? r.card : null;
  const row = (name, engine, cardValue) =>
    console.log(`${name.padEnd(18)} engine ${engine.padEnd(22)} card ${cardValue}`);
  console.log(`${r.model}: role numbers through the engine (${r.method.engine})`);
  row('previous token', fmtBest(r.best.prev_token), c ? fmtBest(c.best.prev_token) : '(old card: no roles)');
  row('induction', fmtBest(r.best.induction, 4), c ? fmtBest(c.best.induction, 4) : '-');
  row('verb to subject', fmtBest(r.best.verb_to_subject), c ? fmtBest(c.best.verb_to_subject) : '-');
  row('copy accuracy', r.copy_accuracy.toFixed(4), c ? String(c.copy_accuracy) : '-');
  row('counts', JSON.stringify(r.counts), c ? JSON.stringify(c.counts) : '-');
  for (const [k, v] of Object.entries(r.method)) console.log(`  ${k}: ${v}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] || '').href) {
  main(process.argv).catch((e) => {
    console.error(`model_roles: ${e.message}`);
    process.exit(1);
  });
}

// The lab's roles panel: what each head turned out to do, as badges on the grid, measured live.
// The scores and thresholds come from the package's analysis module; this module names them,
// writes their formulas in words, and runs the induction probe once per model.
import { ROLES_TABLE, INDUCTION_PROBE, inductionScores, verbSubjectScores } from '../../lib/analysis.js';
import { allHeadScores } from '../../lib/analysis.js';
import { el } from '../views/dom.js';
import { panel } from './panel.js';

// badged in the lab: roles measured on the reader's text ('live') or through the engine on the
// card's probe texts ('probe': induction on common-word lists, verb to subject on probe sentences)
const LIVE = ROLES_TABLE.filter((r) => r.where.includes('live') || r.where.includes('probe'));
/** Roles measured on probe texts, not on the reader's text (their badges say so). */
export const PROBE_ROLES = Object.freeze(ROLES_TABLE.filter((r) => r.where.includes('probe')).map((r) => r.name));
/** Lists the lab's induction probe averages over (a card uses roles.json's induction_probe.lists). */
export const LAB_INDUCTION_LISTS = 8;
/** Short badge text per role (shown on the grid cells). */
export const ROLE_SHORT = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.short])));
/** The formula of each score, in words and symbols (A = the head's attention, row t = query). */
export const ROLE_FORMULAS = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.formula])));
/** The role's name as the legend shows it. */
export const ROLE_NAMES = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.label])));
/** Threshold of every badge on the grid: the live roles and the probe roles (verb to subject). */
export const BADGE_THRESHOLDS = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.threshold])));
const BADGE_DESCRIPTIONS = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.description])));
// a score with a unit (a ratio to uniform attention) reads as '5.2× uniform'; the others are shares in [0, 1]
const formatScore = Object.fromEntries(
  LIVE.map((r) => [r.name, r.unit ? (x) => `${x.toFixed(1)}${r.unit}` : (x) => x.toFixed(2)]),
);

/** Role scores of every head of `result`, with the induction and verb-to-subject scores from the probes. */
// (the induction score always comes from the probe: on ordinary text few tokens repeat, and a
// handful of rows would decide it; verb to subject needs sentences of the article's shape, so it
// comes from the card's probe sentences; NaN, so no badge, until a probe has run)
// `rows` (a HeadScoreRows kept across results) computes only the rows a typed token changed.
export function liveScores(result, probeScores, rows = null) {
  const scores = rows ? rows.scores(result) : allHeadScores(result);
  for (let l = 0; l < scores.length; l++) {
    for (let h = 0; h < scores[l].length; h++) {
      scores[l][h].induction = probeScores?.[l]?.[h]?.induction ?? NaN;
      scores[l][h].verb_to_subject = probeScores?.[l]?.[h]?.verb_to_subject ?? NaN;
    }
  }
  return scores;
}

/** The sentence for a head's badges, e.g. "found after training: attends to the previous token (0.83)". */
export function rolesSentence(scores, roles) {
  if (!roles.length) return 'no strong pattern found on this text';
  return `found after training: ${roles.map((r) => `${BADGE_DESCRIPTIONS[r]} (${formatScore[r](scores[r])})`).join('; ')}`;
}

/**
 * The roles panel: a key of the badges, the formulas one click away, and the induction probe's
 * status. `probe(getModel)` measures induction once, on a random word sequence repeated twice.
 */
export class RolesPanel {
  constructor(doc) {
    const d = doc;
    const roles = panel(
      d,
      'hs-lab-roles',
      'What the heads turned out to do',
      "Badges on the grid are measured live on the current text, except two measured through the engine on probe texts, as the model cards measure them: induction on lists of 20 common words, each list repeated once; verb to subject on the model card's probe sentences (only when the model has a card). They describe patterns found after training, not jobs anyone assigned; a head can show several, and on other text it may behave differently. A badge appears when a score reaches its threshold (in small grid cells, as a dot; hover or focus the head for its words):",
    );
    // a compact key, always visible; the formulas and thresholds one click away
    const key = el(d, 'ul', 'hs-lab-key');
    for (const r of Object.keys(BADGE_THRESHOLDS)) {
      const li = el(d, 'li');
      li.append(el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]), d.createTextNode(` ${ROLE_NAMES[r]}`));
      key.appendChild(li);
    }
    const details = el(d, 'details', 'hs-lab-formulas');
    details.appendChild(
      el(d, 'summary', '', "How each score is computed (A = the head's attention; row t = the token that looks)"),
    );
    const legend = el(d, 'dl', 'hs-lab-legend');
    for (const r of Object.keys(BADGE_THRESHOLDS)) {
      const dt = el(d, 'dt');
      dt.append(
        el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]),
        d.createTextNode(` ${ROLE_NAMES[r]}: ${BADGE_DESCRIPTIONS[r]}`),
      );
      const where =
        PROBE_ROLES.includes(r) && !ROLES_TABLE.find((x) => x.name === r).where.includes('live')
          ? ' (probe sentences only, not the current text)'
          : '';
      const dd = el(d, 'dd', '', `score = ${ROLE_FORMULAS[r]}; badge at ≥ ${BADGE_THRESHOLDS[r]}${where}`);
      legend.append(dt, dd);
    }
    details.appendChild(legend);
    this.status = el(d, 'p', 'hs-lab-roles-status');
    this.status.setAttribute('role', 'status');
    roles.append(key, details, this.status);
    this.element = roles;
    this.probeScores = null;
    this.probePromise = null;
  }

  /**
   * Runs the probes once; resolves when their scores are in `probeScores` ([layer][head] of
   * { induction, verb_to_subject }). `sentences`: the model card's probe sentences, if any, or a
   * promise of them (a widget fetches the card while the model loads).
   */
  probe(getModel, sentences) {
    if (this.probePromise) return this.probePromise;
    this.status.textContent = 'Measuring induction on repeated lists of common words…';
    this.probePromise = (async () => {
      const model = await getModel();
      sentences = await sentences;
      const ind = await inductionScores(model, { lists: LAB_INDUCTION_LISTS });
      const v2s = sentences?.length ? await verbSubjectScores(model, sentences) : { scores: null, sentences: 0 };
      this.probeScores = ind.scores.map((row, l) =>
        row.map((x, h) => ({ induction: x, verb_to_subject: v2s.scores ? v2s.scores[l][h] : NaN })),
      );
      this.probeText = ind.lists[0].text;
      const first = ind.lists[0].text.trim().split(' ').slice(0, INDUCTION_PROBE.listLength).join(' ');
      this.status.textContent =
        `Induction measured on ${ind.lists.length} lists of ${INDUCTION_PROBE.listLength} common words, each repeated once (the first: "${first}"). ` +
        (v2s.scores
          ? `Verb to subject measured on the model card's ${v2s.sentences} probe sentences, not on the current text.`
          : 'Verb to subject: no probe sentences (the model has no card with them), so no badge.');
      return true;
    })().catch((e) => {
      this.status.textContent = `The induction probe could not run: ${e.message}`;
      return false;
    });
    return this.probePromise;
  }
}

// The lab's roles panel: what each head turned out to do, as badges on the grid, measured live.
// The scores and thresholds come from the package's analysis module; this module names them,
// writes their formulas in words, and runs the induction probe once per model.
import { ROLE_THRESHOLDS, ROLE_DESCRIPTIONS, ROLES_TABLE, allHeadScores, inductionProbeText } from '../../lib/analysis.js';
import { el, panel } from './dom.js';

const LIVE = ROLES_TABLE.filter((r) => r.where.includes('live'));
/** Short badge text per role (shown on the grid cells). */
export const ROLE_SHORT = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.short])));
/** The formula of each score, in words and symbols (A = the head's attention, row t = query). */
export const ROLE_FORMULAS = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.formula])));
/** The role's name as the legend shows it. */
export const ROLE_NAMES = Object.freeze(Object.fromEntries(LIVE.map((r) => [r.name, r.label])));

/** Role scores of every head of `result`, with the induction score from the probe run. */
// (the induction score always comes from the probe: on ordinary text few tokens repeat, and a
// handful of rows would decide it; NaN, so no badge, until the probe has run)
export function liveScores(result, probeScores) {
  const scores = allHeadScores(result);
  for (let l = 0; l < scores.length; l++) {
    for (let h = 0; h < scores[l].length; h++) scores[l][h].induction = probeScores?.[l]?.[h]?.induction ?? NaN;
  }
  return scores;
}

/** The sentence for a head's badges, e.g. "found after training: attends to the previous token (0.83)". */
export function rolesSentence(scores, roles) {
  if (!roles.length) return 'no strong pattern found on this text';
  return `found after training: ${roles.map((r) => `${ROLE_DESCRIPTIONS[r]} (${scores[r].toFixed(2)})`).join('; ')}`;
}

/**
 * The roles panel: a key of the badges, the formulas one click away, and the induction probe's
 * status. `probe(getModel)` measures induction once, on a random word sequence repeated twice.
 */
export class RolesPanel {
  constructor(doc) {
    const d = doc;
    const roles = panel(d, 'hs-lab-roles', 'What the heads turned out to do', 'Badges on the grid are measured live on the current text (induction on a random word sequence repeated twice). They describe patterns found after training, not jobs anyone assigned; a head can show several, and on other text it may behave differently. A badge appears when a score reaches its threshold (in small grid cells, as a dot; hover or focus the head for its words):');
    // a compact key, always visible; the formulas and thresholds one click away
    const key = el(d, 'ul', 'hs-lab-key');
    for (const r of Object.keys(ROLE_THRESHOLDS)) {
      const li = el(d, 'li');
      li.append(el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]), d.createTextNode(` ${ROLE_NAMES[r]}`));
      key.appendChild(li);
    }
    const details = el(d, 'details', 'hs-lab-formulas');
    details.appendChild(el(d, 'summary', '', 'How each score is computed (A = the head\'s attention; row t = the token that looks)'));
    const legend = el(d, 'dl', 'hs-lab-legend');
    for (const r of Object.keys(ROLE_THRESHOLDS)) {
      const dt = el(d, 'dt');
      dt.append(el(d, 'span', 'hs-lab-badge', ROLE_SHORT[r]), d.createTextNode(` ${ROLE_NAMES[r]}: ${ROLE_DESCRIPTIONS[r]}`));
      const dd = el(d, 'dd', '', `score = ${ROLE_FORMULAS[r]}; badge at ≥ ${ROLE_THRESHOLDS[r]}`);
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

  /** Runs the induction probe once; resolves when its scores are in `probeScores`. */
  probe(getModel) {
    if (this.probePromise) return this.probePromise;
    this.status.textContent = 'Measuring induction on a repeated random word sequence…';
    this.probePromise = (async () => {
      const model = await getModel();
      const probe = await inductionProbeText(model, { length: 16, seed: 1 });
      const r = await model.run(probe, { topK: 1 });
      this.probeScores = allHeadScores(r);
      this.probeText = probe;
      this.status.textContent = `Induction measured on: "${probe.trim()}" (16 random words, twice).`;
      return true;
    })().catch((e) => {
      this.status.textContent = `The induction probe could not run: ${e.message}`;
      return false;
    });
    return this.probePromise;
  }
}

// Section 3's training run, pure: which heads have taken on a role on the trainer's probe so far
// (roles.json's thresholds), in a sentence a reader can follow as they form. Tested in
// tests/js/unit/explainer.test.js.

const ROLE_NAMES = { previous: 'previous token', induction: 'induction' };

/**
 * The heads past a role's threshold on a probe (TrainerProbe: previous and induction scores,
 * [nLayer, nHead] each): [{ layer, head, role, score }], strongest first.
 */
export function formedRoles(probe, thresholds) {
  const out = [];
  for (const role of Object.keys(ROLE_NAMES)) {
    const scores = probe?.[role];
    if (!scores || !Number.isFinite(thresholds[role])) continue;
    for (let i = 0; i < scores.length; i++)
      if (scores[i] >= thresholds[role])
        out.push({ layer: Math.floor(i / probe.nHead), head: i % probe.nHead, role, score: scores[i] });
  }
  return out.sort((a, b) => b.score - a.score);
}

/** "no head has a role yet" or "L0H1 previous token (0.93), L1H2 induction (0.61)". */
export function rolesSentence(formed) {
  if (!formed.length) return 'no head has a role yet';
  return formed.map((f) => `L${f.layer}H${f.head} ${ROLE_NAMES[f.role]} (${f.score.toFixed(2)})`).join(', ');
}

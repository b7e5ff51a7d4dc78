// "Heads working together" in Node (web/component/charts/circuits.js): the edges (only from a head to
// a head of a later layer, only at or above the threshold, only of the kinds shown, strongest first),
// the scene (each head where the grid puts it with its copying score as its badge, every edge drawn
// from its head to its head in its kind's colour and dash pattern, the threshold and the baseline on
// the scale, the focusable heads), and a score split summed per upstream head.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { themeFrom, signedColour } from '../../../web/component/runtime/theme.js';
import {
  KINDS,
  kindColour,
  compositionEdges,
  defaultThreshold,
  maxComposition,
  circuitsScene,
  circuitsLabel,
  upstreamHeadSums,
  BADGE_SCALE,
} from '../../../web/component/charts/circuits.js';

const theme = themeFrom(() => '');
const dark = themeFrom((n) => (n === '--hs-scheme' ? 'dark' : ''));

// 3 layers x 2 heads (6 heads); composition[a * 6 + b], NaN unless layer(a) < layer(b)
function circuits() {
  const N = 6;
  const m = () => new Float64Array(N * N).fill(NaN);
  const q = m();
  const k = m();
  const v = m();
  const set = (x, a, b, s) => {
    x[a * N + b] = s;
  };
  // every pair of an earlier and a later layer: a small score, then a few strong ones
  for (let a = 0; a < N; a++)
    for (let b = 0; b < N; b++)
      if (Math.floor(a / 2) < Math.floor(b / 2)) {
        q[a * N + b] = 0.05;
        k[a * N + b] = 0.06;
        v[a * N + b] = 0.07;
      }
  set(k, 1, 2, 0.6); // L0H1 -> L1H0, K
  set(q, 1, 2, 0.3); // the same pair, Q
  set(v, 0, 5, 0.2); // L0H0 -> L2H1, V
  set(q, 3, 4, 0.15); // L1H1 -> L2H0, Q
  return {
    nLayer: 3,
    nHead: 2,
    copying: Float64Array.from([0.9, -0.8, 0.1, 0, -0.05, 0.5]),
    composition: { q, k, v },
    baseline: { q: 0.08, k: 0.079, v: 0.081 },
    seeds: 16,
  };
}

test('compositionEdges: only later layers, at or above the threshold, of the kinds asked, strongest first', () => {
  const c = circuits();
  const e = compositionEdges(c, { threshold: 0.15 });
  assert.deepEqual(
    e.map((x) => [x.kind, x.from, x.to, x.score]),
    [
      ['k', [0, 1], [1, 0], 0.6],
      ['q', [0, 1], [1, 0], 0.3],
      ['v', [0, 0], [2, 1], 0.2],
      ['q', [1, 1], [2, 0], 0.15],
    ],
  );
  assert.deepEqual(
    compositionEdges(c, { threshold: 0.15, kinds: ['q'] }).map((x) => x.score),
    [0.3, 0.15],
  );
  // threshold 0: every pair of an earlier and a later layer (4 + 4 + 4 = 12 pairs), never a pair within a layer
  const all = compositionEdges(c, { threshold: 0 });
  assert.equal(all.length, 3 * 12);
  for (const x of all) assert.ok(x.from[0] < x.to[0]);
  // a score written where layer(a) >= layer(b) is not an edge
  c.composition.q[2 * 6 + 1] = 0.9;
  assert.equal(compositionEdges(c, { threshold: 0.5 }).length, 1);
});

test('defaultThreshold is twice the largest baseline, rounded up; maxComposition the largest score', () => {
  const c = circuits();
  assert.equal(defaultThreshold(c), 0.17);
  assert.equal(maxComposition(c), 0.6);
  c.baseline = { q: 0.5, k: 0.5, v: 0.5 };
  assert.equal(defaultThreshold(c), 0.6, 'never above the largest score');
});

test('circuitsScene: heads where the grid puts them, badges, edges above the threshold in their styles', () => {
  const c = circuits();
  const { scene, edges, above, node } = circuitsScene(c, theme, { width: 400, threshold: 0.15, selected: [1, 0] });
  assert.equal(above, 4);
  assert.equal(edges.length, 4);
  // heads: layers down, heads across, evenly
  const a = node(0, 0);
  const b = node(0, 1);
  const d = node(1, 0);
  assert.ok(b.x > a.x && b.y === a.y);
  assert.ok(d.y > a.y && d.x === a.x);
  assert.equal(node(2, 1).x - node(2, 0).x, b.x - a.x);
  // a badge per head with its copying score, coloured on the signed scale (blue copies, orange not)
  const badges = scene.items.filter((it) => it.data?.badge);
  assert.equal(badges.length, 6);
  for (const t of badges) {
    const { layer, head } = t.data;
    assert.equal(t.data.copying, c.copying[layer * 2 + head]);
    const box = node(layer, head);
    assert.equal(t.x, box.x + box.w / 2);
    const rect = scene.items.find(
      (it) => it.type === 'rect' && !it.hit && it.data?.layer === layer && it.data?.head === head,
    );
    assert.equal(rect.fill, signedColour(theme, c.copying[layer * 2 + head], BADGE_SCALE));
  }
  assert.deepEqual(
    badges.map((t) => t.text),
    ['0.90', '−0.80', '0.10', '0.00', '−0.05', '0.50'],
  );
  // the edges: one line each, from the bottom of its first head to the top of its second, in its kind's style
  const lines = scene.items.filter((it) => it.type === 'line' && it.data?.kind);
  assert.equal(lines.length, 4);
  for (const l of lines) {
    const e = edges.find(
      (x) =>
        `L${x.from[0]}H${x.from[1]}` === l.data.from &&
        `L${x.to[0]}H${x.to[1]}` === l.data.to &&
        x.kind === l.data.kind,
    );
    assert.ok(e, `${l.data.kind} ${l.data.from} -> ${l.data.to} is an edge`);
    assert.equal(l.data.score, e.score);
    const kind = KINDS.find((k) => k.kind === l.data.kind);
    assert.equal(l.stroke, kindColour(theme, kind.kind));
    assert.deepEqual(l.dash, kind.dash);
    const from = node(...e.from);
    const to = node(...e.to);
    assert.equal(l.y1, from.y + from.h);
    assert.equal(l.y2, to.y);
    assert.ok(Math.abs(l.x1 - (from.x + from.w / 2)) <= 6);
    assert.ok(Math.abs(l.x2 - (to.x + to.w / 2)) <= 6);
  }
  // the three kinds look different without colour, and differ in colour too, in both themes
  assert.equal(new Set(KINDS.map((k) => k.dash.join(','))).size, 3);
  for (const t of [theme, dark]) assert.equal(new Set(KINDS.map((k) => kindColour(t, k.kind))).size, 3);
  // a pair composing two ways: side by side, not on top of each other
  const pair = lines.filter((l) => l.data.from === 'L0H1' && l.data.to === 'L1H0');
  assert.equal(pair.length, 2);
  assert.notEqual(pair[0].x1, pair[1].x1);
  // the selected head's edges on top and solid; the others fainter
  const last = lines.at(-1);
  assert.ok(last.data.from === 'L1H0' || last.data.to === 'L1H0');
  assert.equal(lines.find((l) => l.data.from === 'L0H0').opacity < last.opacity, true);
  // a thicker line for a larger score
  const w = (from, kind) => lines.find((l) => l.data.from === from && l.data.kind === kind).width;
  assert.ok(w('L0H1', 'k') > w('L0H1', 'q'));
  // the scale: the threshold and the baseline marked where their values put them
  const thr = scene.items.find((it) => it.data?.threshold !== undefined);
  const base = scene.items.find((it) => it.data?.baseline !== undefined);
  assert.equal(thr.data.threshold, 0.15);
  assert.equal(base.data.baseline, 0.081);
  assert.ok(base.x1 < thr.x + thr.w / 2, 'the baseline sits below the threshold here');
  assert.ok(scene.items.some((it) => it.type === 'text' && it.text === 'random 0.08'));
  assert.ok(scene.items.some((it) => it.type === 'text' && it.text === 'threshold 0.15'));
  // the legend: each kind's line in its style
  for (const k of KINDS) {
    const l = scene.items.find((it) => it.data?.legend === k.kind);
    assert.deepEqual(l.dash, k.dash);
  }
  // focusable heads: one in the tab order (the selected one), each named with its score and edges
  const hits = scene.items.filter((it) => it.hit);
  assert.equal(hits.length, 6);
  assert.deepEqual(
    hits.filter((h) => h.attrs.tabindex === 0).map((h) => [h.data.layer, h.data.head]),
    [[1, 0]],
  );
  assert.equal(hits[2].attrs['aria-pressed'], 'true');
  assert.equal(hits[2].attrs['aria-label'], 'Layer 1 head 0: copying score 0.10 (copies); 2 edges in, 0 out');
  assert.equal(hits[1].attrs['aria-label'], 'Layer 0 head 1: copying score −0.80; 0 edges in, 2 out');
  // every item inside the scene
  for (const it of scene.items) {
    if (it.type === 'rect') assert.ok(it.x >= -3 && it.x + it.w <= scene.width + 0.01 && it.y + it.h <= scene.height);
    if (it.type === 'line') assert.ok(Math.max(it.x1, it.x2) <= scene.width && Math.max(it.y1, it.y2) <= scene.height);
  }
});

test('circuitsScene: a higher threshold and fewer kinds draw fewer edges; maxEdges keeps the strongest', () => {
  const c = circuits();
  const count = (o) =>
    circuitsScene(c, theme, o).scene.items.filter((it) => it.type === 'line' && it.data?.kind).length;
  assert.equal(count({ threshold: 0.25 }), 2);
  assert.equal(count({ threshold: 0.25, kinds: ['q', 'v'] }), 1);
  assert.equal(count({ threshold: 0.15, kinds: [] }), 0);
  assert.equal(count({ threshold: 0 }), 36);
  const capped = circuitsScene(c, theme, { threshold: 0, maxEdges: 3 });
  assert.equal(capped.above, 36);
  assert.deepEqual(
    capped.edges.map((e) => e.score),
    [0.6, 0.3, 0.2],
  );
  assert.match(
    circuitsLabel(c, { kinds: ['q', 'k', 'v'], threshold: 0, ...capped }),
    /36 Q, K, V composition edges at or above 0\.00 \(the strongest 3 drawn\)\. Strongest: L0H1 to L1H0, K composition 0\.60\./,
  );
  // a phone's width: still every head inside the scene, narrower badges with one digit
  const phone = circuitsScene(c, theme, { width: 300, threshold: 0.15 });
  assert.ok(phone.scene.width <= 300);
  assert.equal(phone.scene.items.find((it) => it.data?.badge).text.length <= 4, true);
});

test('upstreamHeadSums: rows summed per head (query side), columns per head (key side), strongest first', () => {
  const components = ['embed', 'pos', 'L0H0', 'L0H1', 'L0.attn_bias', 'L0.mlp', 'bias'];
  const P = components.length;
  const table = new Float64Array(P * P);
  for (let a = 0; a < P; a++) for (let b = 0; b < P; b++) table[a * P + b] = (a + 1) * 0.1 - b * 0.02;
  table[3 * P + 3] += 1; // L0H1 on both sides
  table[2 * P + 5] -= 2; // L0H0 (query) x L0.mlp (key)
  const score = table.reduce((s, v) => s + v, 0);
  const u = upstreamHeadSums({ components, table, score });
  const row = (a) => Array.from({ length: P }, (_, b) => table[a * P + b]).reduce((s, v) => s + v, 0);
  const col = (b) => Array.from({ length: P }, (_, a) => table[a * P + b]).reduce((s, v) => s + v, 0);
  assert.deepEqual(
    u.query.map((x) => x.name),
    ['L0H1', 'L0H0'].sort((x, y) => Math.abs(row(components.indexOf(y))) - Math.abs(row(components.indexOf(x)))),
  );
  for (const x of u.query) assert.ok(Math.abs(x.value - row(components.indexOf(x.name))) < 1e-12);
  for (const x of u.key) assert.ok(Math.abs(x.value - col(components.indexOf(x.name))) < 1e-12);
  assert.deepEqual(
    u.key.map((x) => [x.layer, x.head]),
    [
      [0, 1],
      [0, 0],
    ],
  );
  assert.deepEqual(u.keyOthers.map((x) => x.name).sort(), ['L0.attn_bias', 'L0.mlp', 'bias', 'embed', 'pos']);
  // each side's parts sum to the score
  for (const [heads, others] of [
    [u.query, u.queryOthers],
    [u.key, u.keyOthers],
  ])
    assert.ok(Math.abs([...heads, ...others].reduce((s, x) => s + x.value, 0) - score) < 1e-9);
  assert.equal(u.total, score);
  // layer 0: no heads upstream
  const first = upstreamHeadSums({
    components: ['embed', 'pos', 'bias'],
    table: new Float64Array(9).fill(1),
    score: 9,
  });
  assert.deepEqual(first.query, []);
  assert.deepEqual(first.key, []);
});

// "A sense of scale": every attention head of several models drawn as one small square each, every
// model at the same square size, so the pictures' areas compare as the head counts do. A scene
// (web/component/views/scene.js's display list); pure, tested in tests/js/unit/explainer.test.js.
import { formatCount } from './facts.js';

const LABEL = 14; // the label's line above each block
const GAP = 18; // between blocks

/**
 * models: [{ name, nLayer, nHead, own? }] (own: the reader's model, drawn in the accent colour);
 * width: the scene's width, which the widest model's heads per layer fill.
 * Returns { scene, cell } (cell: one head's square, in scene pixels). Every head is a rect with
 * data { model, layer, head }; each block's label a text with data { model }.
 */
export function scaleScene(models, theme, { width = 480 } = {}) {
  const widest = Math.max(1, ...models.map((m) => m.nHead));
  const cell = width / widest;
  const size = cell >= 3 ? cell * 0.8 : cell; // a gap between squares while they are big enough to show one
  const items = [];
  let y = 0;
  for (const m of models) {
    y += LABEL;
    items.push({
      type: 'text',
      x: 0,
      y: y - 3,
      text: `${m.name}: ${m.nLayer} layers × ${m.nHead} heads = ${formatCount(m.nLayer * m.nHead)} heads`,
      size: 12,
      weight: m.own ? 'bold' : undefined,
      fill: theme.fg,
      data: { model: m.name },
    });
    y += 4;
    const fill = m.own ? theme.accent : theme.muted;
    for (let l = 0; l < m.nLayer; l++)
      for (let h = 0; h < m.nHead; h++)
        items.push({
          type: 'rect',
          x: h * cell,
          y: y + l * cell,
          w: size,
          h: size,
          fill,
          data: { model: m.name, layer: l, head: h },
        });
    y += m.nLayer * cell + GAP;
  }
  return {
    scene: { width, height: Math.ceil(y - GAP + 2), background: null, font: theme.font, items },
    cell,
  };
}

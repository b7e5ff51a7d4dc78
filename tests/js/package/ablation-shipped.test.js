// Head ablation on a SHIPPED model: the WebAssembly engine with two heads switched off (`ablate`)
// against PyTorch with the same heads zeroed (head_mask), from
// web/models/headscope-base/ablation_reference.json (scripts/train/ablation_reference.py).
//
// Tolerance: 2e-3 absolute on the logits. Both sides compute in float32 from the same F16 weights
// (converted exactly to float32), so the difference is float32 rounding accumulated through
// 4 layers of 256-wide dot products, layer norms, GELU and softmax (summation order and SIMD
// reassociation differ, and the engine's exp/tanh are approximations within a few ulp): each
// step adds relative errors around 1e-6 to 1e-5, and logits of magnitude ~10 then differ by
// ~1e-4; 2e-3 leaves a margin of about 10x while a wrong head (or no ablation at all) moves
// logits by 0.1 or more, which the test also checks. The mean loss is compared the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { loadModel } from '../../../dist/headscope.js';

const TOL = 2e-3;
// the shipped model's folder that holds the reference (web/models; dist/models is a copy of it)
// (HEADSCOPE_ABLATION_FOLDER: another folder holding a model and its ablation_reference.json)
const override =
  process.env.HEADSCOPE_ABLATION_FOLDER &&
  pathToFileURL(`${process.env.HEADSCOPE_ABLATION_FOLDER.replace(/\/$/, '')}/`);
const candidates = ['../../../web/models/headscope-base/'].map((p) => new URL(p, import.meta.url));
const folder = override || candidates.find((u) => existsSync(new URL('model.safetensors', u)));
const refUrl = override
  ? new URL('ablation_reference.json', override)
  : new URL('../../../web/models/headscope-base/ablation_reference.json', import.meta.url);
const have = folder && existsSync(refUrl);

test(
  'engine ablation equals PyTorch with the same heads zeroed (shipped headscope-base)',
  { skip: have ? false : 'web/models/headscope-base (with ablation_reference.json) not built yet' },
  async () => {
    const ref = JSON.parse(readFileSync(refUrl, 'utf8'));
    const model = await loadModel(folder);
    try {
      assert.equal(ref.ablate.length, 2, 'two heads zeroed');
      const sha = createHash('sha256')
        .update(readFileSync(new URL('model.safetensors', folder)))
        .digest('hex');
      assert.equal(
        sha,
        ref.weights_sha256,
        'the reference was made from these weights (after re-training, run scripts/train/ablation_reference.py again)',
      );
      const toks = model.tokenize(ref.text).map((t) => t.id);
      assert.deepEqual(toks, ref.ids, 'same tokens as the reference');
      const abl = model.run(ref.text, { ablate: ref.ablate, allLogits: true });
      const full = model.run(ref.text, { allLogits: true });
      let maxDiff = 0;
      let maxFullDiff = 0;
      let effect = 0;
      for (let i = 0; i < ref.logits_last.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(abl.logitsLast[i] - ref.logits_last[i]));
        maxFullDiff = Math.max(maxFullDiff, Math.abs(full.logitsLast[i] - ref.logits_last_full[i]));
        effect = Math.max(effect, Math.abs(ref.logits_last[i] - ref.logits_last_full[i]));
      }
      assert.equal(abl.logitsLast.length, ref.logits_last.length);
      assert.ok(maxDiff <= TOL, `ablated logits: max |engine - PyTorch| = ${maxDiff}`);
      assert.ok(maxFullDiff <= TOL, `full logits: max |engine - PyTorch| = ${maxFullDiff}`);
      // the check has teeth: zeroing these heads moves the logits far more than the tolerance
      assert.ok(effect > 20 * TOL, `ablation effect ${effect} should dwarf the tolerance`);
      assert.ok(
        Math.abs(abl.loss - ref.loss_ablated) <= TOL,
        `loss with heads off: ${abl.loss} vs ${ref.loss_ablated}`,
      );
      assert.ok(Math.abs(full.loss - ref.loss) <= TOL, `loss: ${full.loss} vs ${ref.loss}`);
      console.log(
        `# ablate ${JSON.stringify(ref.ablate)}: max |diff| ${maxDiff.toExponential(2)} (effect ${effect.toFixed(3)}), loss ${full.loss.toFixed(4)} -> ${abl.loss.toFixed(4)}`,
      );
    } finally {
      model.dispose();
    }
  },
);

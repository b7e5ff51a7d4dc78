// A Node 20 script written against the published types: headscope and headscope/analysis without
// the DOM's types (the lib a Node project has, plus @types/node), so that the Node entry points
// need nothing a browser declares. Compiled by tests/types/run.sh, never run.
import { readFile } from 'node:fs/promises';
import { loadModel, createTrainer, type ModelFiles, type RunResult } from 'headscope';
import { allHeadScores, headBadges, knockoutRanking } from 'headscope/analysis';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function same<A, B>(..._proof: Equal<A, B> extends true ? [] : [never]): void {}

const folder = new URL('file:///models/gpt2/');
const model = await loadModel(folder, { signal: AbortSignal.timeout(30_000) });
// the four files read from disk: Buffers are Uint8Arrays, which a source takes as they are
const files: ModelFiles = {
  config: await readFile(new URL('config.json', folder)),
  weights: await readFile(new URL('model.safetensors', folder)),
  vocab: await readFile(new URL('vocab.json', folder), 'utf8'),
  merges: await readFile(new URL('merges.txt', folder), 'utf8'),
};
const fromDisk = await loadModel(files, { weights: 'f16' });
const result = fromDisk.run('The chef, who trained in Paris, cooked the meal quickly.', { allLogits: true });
same<typeof result, RunResult>();
const badges = allHeadScores(result).map((layer) => layer.map((scores) => headBadges(scores).join('+')));
const ranking = await knockoutRanking(model, result.text);
console.log(JSON.stringify({ loss: result.loss, badges, worst: ranking.heads.at(-1) }));

const trainer = await createTrainer({ preset: 'induction', steps: 50 });
console.log(trainer.step(50).at(-1), trainer.bytes);
trainer.dispose();
model.dispose();
fromDisk.dispose();
// @ts-expect-error  a Node folder is a file: URL or a path string, not a Buffer
await loadModel(await readFile('/models/gpt2/config.json'));

// A browser app written against the published types, as a user writes it: the package's three typed
// entry points (headscope, headscope/worker, headscope/analysis) imported by name, resolved through
// package.json "exports". Never run: tests/types/run.sh compiles it with `tsc --noEmit` (strict).
//
// Two kinds of check. `same<A, B>()` fails unless two types are exactly equal, so a return type that
// widens (to any, to a union) or changes fails the build. `// @ts-expect-error` marks a misuse the
// types must refuse; if they ever accept it, tsc reports the directive as unused and fails.
import {
  loadModel, shippedModels, defaultModelName, attentionIndex, strideOf, createTrainer, trainingPresets,
  wasmHeapUsedBytes, wasmMemoryBytes, HeadscopeModel,
  type ModelFiles, type ModelInfo, type LoadProgress, type RunOptions, type RunResult, type ThumbnailRunResult, type Token, type Prediction,
  type PatchOptions, type PatchProgress, type PatchReport, type RunPatch, type ScoreSplit, type Circuits, type AttentionTile, type AttentionThumbnails, type ModelMemory, type HeadscopeTrainer, type TrainerProbe, type TrainerSpec, type TrainingPreset, type HeadInside, type TokenizerJsonModelFiles,
  type HeadsOptions, type HeadsProgress, type HeadsReport, type LogitAttribution,
  type GenerateOptions, type GenerateResult, type GeneratedToken, type SamplingDistribution,
} from 'headscope';
import {
  loadModelInWorker, createTrainerInWorker, WorkerStartError,
  type WorkerModel, type CacheState, type TrainProgress, type WorkerTrainer,
} from 'headscope/worker';
import 'headscope/component';
import 'headscope/lab-component';
import type { HeadscopeViewElement, HeadscopeViewState, Scene } from 'headscope/component';
import type { HeadscopeLabElement, HeadscopeLabPanels } from 'headscope/lab-component';
import {
  allHeadScores, headBadges, headScores, HeadScoreRows, ROLE_THRESHOLDS, ROLE_DESCRIPTIONS, ROLES_TABLE, INDUCTION_PROBE,
  knockoutRanking, inductionProbeText, inductionScores, inductionWordLists, prefixMatchingScores,
  verbSubjectParts, verbSubjectRatios, verbSubjectScores,
  type HeadScores, type Role, type KnockoutEntry, type RoleInfo, type AnyModel,
} from 'headscope/analysis';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function same<A, B>(..._proof: Equal<A, B> extends true ? [] : [never]): void {}
const show = (line: string): void => { document.getElementById('out')!.textContent = line; };

// ---- loading a model on the page ---------------------------------------------------------------
const names: readonly string[] = shippedModels;
const fallbackName: string = defaultModelName;
const loads: LoadProgress[] = [];
const model = await loadModel('heads-4', {
  weights: 'q8',
  signal: AbortSignal.timeout(60_000),
  onProgress: (p) => { loads.push(p); show(p.total ? `${Math.round((100 * p.loaded) / p.total)}%` : `${p.loaded} bytes`); },
});
same<typeof model, HeadscopeModel>();
await loadModel();                                              // the default model
const twoThreads = await loadModel('heads-4', { threads: 2 });
same<typeof twoThreads.threads, number>();
await loadModel(new URL('./models/gpt2/', location.href));      // a folder in the GPT-2 layout
const files: ModelFiles = { config: '{}', weights: new ArrayBuffer(8), vocab: new Uint8Array(2), merges: '', name: 'mine' };
await loadModel(files);
// a Llama-family model: tokenizer.json instead of vocab.json and merges.txt
const llamaFiles: TokenizerJsonModelFiles = { config: '{}', weights: new Uint8Array(8), tokenizer: '{}' };
await loadModel(llamaFiles);
// @ts-expect-error  the storage is 'f32' or 'f16'
await loadModel('heads-4', { weights: 'f8' });
// @ts-expect-error  a source is a name, a URL or the four files
await loadModel(42);
// @ts-expect-error  the weights are bytes, not text
await loadModel({ config: '{}', weights: 'safetensors', vocab: '', merges: '' });

const info: ModelInfo = model.info;
const { nLayer, nHead, nPositions, headSize, vocabSize } = info.config;
const sharing: number = info.config.nHead / info.config.nKvHead;  // query heads per key/value head
const family: string = info.config.modelType;
const tied: boolean = info.config.tiedEmbeddings;
same<typeof info.weights, 'f32' | 'f16' | 'q8'>();
const relaxed: boolean = info.simd.relaxedMadd;
// @ts-expect-error  info is read-only
model.info = info;

// ---- a run and its result ----------------------------------------------------------------------
const text = 'The chef, who trained in Paris, cooked the meal quickly.';
const options: RunOptions = { topK: 5, ablate: [[0, 1], [1, 2]], allLogits: true };
const result = model.run(text, options);
same<typeof result, RunResult>();
same<ReturnType<RunResult['attention']>, Float32Array>();
same<typeof result.tokens, Token[]>();
same<typeof result.topNext, Prediction[]>();
same<typeof result.loss, number | undefined>();
const best = result.topNext[0];
if (best) show(`${best.token} ${(100 * best.prob).toFixed(1)}% (id ${best.id})`);
const lastRow = result.attention(nLayer - 1, nHead - 1).subarray((result.T - 1) * result.T);
const onFirst: number = result.attentionAll[attentionIndex(result, 0, 1, result.T - 1, 0)];
const blockWidth: number = strideOf(result);
const norms: Float32Array = result.headContribution(0, 0);
const sized = model.run(text, { valueNorms: true });
same<typeof sized.valueNorms, Float32Array | undefined>();
const moved: Float32Array = sized.headValueNorms(0, 1);
// @ts-expect-error  valueNorms is there only with the option
const alwaysSized: Float32Array = result.valueNorms;
const spans = result.tokens.map((t) => text.slice(t.start, t.end));
const offHeads: Array<[number, number]> = result.ablate;
// @ts-expect-error  loss is there only with allLogits
const alwaysLoss: number = result.loss;
// @ts-expect-error  attention() takes a layer and a head
result.attention(0);
// @ts-expect-error  ablate holds [layer, head] pairs
model.run(text, { ablate: [0, 1] });
// @ts-expect-error  topK is a number
model.run(text, { topK: '5' });
// @ts-expect-error  on the page, run() returns the result itself, not a promise
model.run(text).then(show);
// @ts-expect-error  the text is a string
model.run(['The', 'chef']);

const switchedOff = [[0, 1]] as const;                           // a constant set of heads, read-only
model.run(text, { ablate: switchedOff });
const typed = model.run(`${text} Then`, { reuse: result });     // typing at the end: only new rows
const cached = model.prefill(text, { ablate: [[0, 1]], allLogits: true });
const reused: number = cached.reusedTokens + cached.droppedTokens + cached.tokens;
const reallocated: boolean = model.reserve(nPositions);
// one head's insides: q, k, v, scores, weights, z, its write and each value's size
const inside = model.inspectHead(text, 1, 2);
same<typeof inside, HeadInside>();
same<typeof inside.scores, Float32Array>();
same<typeof inside.valueNorm, Float32Array>();
same<typeof inside.tokens, Token[]>();
const qOfLast: Float32Array = inside.q.subarray((inside.T - 1) * inside.headSize, inside.T * inside.headSize);
const masked: boolean = inside.scores[1] === -Infinity;
const writeWidth: number = inside.out.length / inside.T - inside.nEmbd;
// with heads switched off, as a run: the insides of the model the views show
const insideOff = model.inspectHead(text, 1, 2, { ablate: switchedOff });
const insideOffHeads: Array<[number, number]> = insideOff.ablate;
// @ts-expect-error  ablate holds [layer, head] pairs
model.inspectHead(text, 1, 2, { ablate: [1, 2] });
// @ts-expect-error  the layer is a number
model.inspectHead(text, '1', 2);
// @ts-expect-error  on the page, inspectHead() returns the insides, not a promise
model.inspectHead(text, 0, 0).then(show);
// @ts-expect-error  the insides are read, not a result with accessors
inside.attention(0, 0);
// which heads the model needs: the greedy curve beside random orders, with progress and cancel
const measuring = new AbortController();
const heldOut: HeadsOptions = { randomOrders: 4, seed: 1, exactLimit: 64, candidates: 4, signal: measuring.signal };
const report = await model.measureHeads(text, {
  ...heldOut,
  onProgress: async ({ fraction }: HeadsProgress) => { show(`${Math.round(100 * fraction)}%`); await Promise.resolve(); },
});
same<typeof report, HeadsReport>();
same<typeof report.order, Array<[number, number]>>();
same<typeof report.prunedLoss, Float64Array>();
const lastSurvivor = report.order[report.order.length - 1];
const half = (report.prunedLoss[report.order.length / 2] ?? NaN) - (report.randomLossMean[report.order.length / 2] ?? NaN);
const gradient: number = report.gateGrad[0] ?? 0;
// @ts-expect-error  measureHeads() is a promise, also on the page thread
const notAReport: HeadsReport = model.measureHeads(text);
// @ts-expect-error  randomOrders is a number
await model.measureHeads(text, { randomOrders: 'eight' });
// which heads carry the answer: the attribution map in the first progress, the exact one as it fills in
const patching: PatchOptions = { clean: 'Mr. Smith left. Mr.', corrupted: 'Mr. Jones left. Mr.', answer: ' Smith', distractor: 7 };
const patched = await model.patch({ ...patching, byPosition: true, onProgress: ({ fraction, report }: PatchProgress) => show(`${fraction} ${report.headsAttribution[0]}`) });
same<typeof patched, PatchReport>();
same<typeof patched.headsByPosition, Float64Array | null>();
const carried: number = patched.heads[0] ?? NaN;
const answerText: string = patched.answer.text;
const patchedRun = model.run(patching.corrupted, { patch: { from: patching.clean, layer: 1, head: 2 } });
same<typeof patchedRun.patch, RunPatch | null>();
// @ts-expect-error  a patch names its head
model.run(patching.corrupted, { patch: { from: patching.clean } });
// why a head attends, and which heads work together
const split = model.explainScore(text, 1, 2, 3, 1, { versus: 'mean', ablate: [[0, 1]] });
same<typeof split, ScoreSplit>();
const dominant: string = split.components[0] ?? '';
same<typeof split.versus, number | 'mean'>();
const circuitsOfModel = model.circuits({ seeds: 4 });
same<typeof circuitsOfModel, Circuits>();
same<typeof circuitsOfModel.composition.k, Float64Array>();
// @ts-expect-error  versus is a key position or 'mean'
model.explainScore(text, 1, 2, 3, 1, { versus: 'all' });
// the parts of the maps a view pulls
const tile = model.attentionTile(text, 0, 1, { rows: [0, 4], columns: [0, 4], bin: 2 });
same<typeof tile, AttentionTile>();
same<typeof tile.values, Float32Array>();
const thumbs: AttentionThumbnails = model.attentionThumbnails(text, { size: 64 });
same<typeof thumbs.n, number>();
// a long text's run: thumbnails and no map; the default run keeps attentionAll
const long = model.run(text, { attention: 'thumbnails', pull: { heads: [[0, 1]], ids: [] } });
same<typeof long, ThumbnailRunResult>();
same<typeof long.thumbnails, Float32Array>();
same<typeof long.attentionAll, undefined>();
// only the rows of a window of the text (around the last token), and where they end
const windowed = model.run(text, {
  attention: 'thumbnails',
  pull: { heads: [[0, 1]], ids: [], window: { around: null, size: 128 } },
});
same<typeof windowed.pulledTo, number | undefined>();
// @ts-expect-error  a window has a size
model.run(text, { attention: 'thumbnails', pull: { heads: [[0, 1]], ids: [], window: { around: 3 } } });
same<typeof model.run extends (t: string) => RunResult ? true : false, true>();
// @ts-expect-error  attention is 'all' or 'thumbnails'
model.run(text, { attention: 'none' });
const mem: ModelMemory = model.memory();
same<typeof mem.attentionMaps, boolean>();
const bare = await loadModel('headscope-base', { attentionMaps: false });
same<typeof bare.info.attentionMaps, boolean>();
// @ts-expect-error  rows is [begin, end]
model.attentionTile(text, 0, 1, { rows: 3 });
// @ts-expect-error  the clean text is required
await model.patch({ corrupted: 'x' });
// @ts-expect-error  byPosition is a boolean
await model.patch({ ...patching, byPosition: 1 });
// what pushed the predicted token at the last position, head by head
const attribution = model.logitAttribution(result.T - 1, best?.id ?? 0);
same<typeof attribution, LogitAttribution>();
same<typeof attribution.heads, Float64Array>();
const rounding: number = Math.abs(attribution.total - attribution.logit);
// the split of a given text's run, which the answer names
const ofText = model.logitAttribution(result.T - 1, best?.id ?? 0, { text: result.text, ablate: result.ablate });
const splitText: string = ofText.text;
const splitAblate: Array<[number, number]> = ofText.ablate;
// @ts-expect-error  `of` names a text
model.logitAttribution(0, 0, { ablate: [] });
// @ts-expect-error  on the page, logitAttribution() returns the parts, not a promise
model.logitAttribution(0, 0).then(show);
// the model writes: a result per token for the views, stopped by a signal
const writing = new AbortController();
const settings: GenerateOptions = { maxTokens: 20, temperature: 0.8, topK: 40, topP: 0.95, seed: 7, signal: writing.signal };
let onScreen: RunResult | null = result;
const written = await model.generate(text, {
  ...settings,
  ablate: [[0, 1]],
  reuse: onScreen,
  onToken: async ({ index, id, token, prob, distribution, result: sofar }: GeneratedToken) => {
    onScreen = sofar;
    same<typeof distribution, SamplingDistribution>();
    same<typeof distribution.probs, Float64Array>();
    const drawnRank: number = Array.from(distribution.ids).indexOf(id);
    show(`${index}: ${token} (${(100 * prob).toFixed(1)}%, rank ${drawnRank}, ${distribution.top[0]?.token ?? ''} first)`);
    if (sofar.T > 100) writing.abort();
    await new Promise(requestAnimationFrame);
  },
});
same<typeof written, GenerateResult>();
same<typeof written.generatedIds, number[]>();
const writtenTokens: Token[] = written.tokens.slice(written.promptTokens);
const stoppedEarly: boolean = written.stopped;
// @ts-expect-error  maxTokens is required
await model.generate(text, { temperature: 0 });
// @ts-expect-error  topP is a number
await model.generate(text, { maxTokens: 3, topP: '0.9' });
// @ts-expect-error  generate() is a promise, also on the page thread
const notWritten: GenerateResult = model.generate(text, { maxTokens: 3 });
const ids: number[] = model.tokenize(text).map((t) => t.id);
const shown: string = model.tokenText(ids[0] ?? 0);
model.dispose();
const gone: boolean = model.disposed;
const heap: number = (await wasmHeapUsedBytes()) + (await wasmMemoryBytes());

// ---- the same model in a Web Worker ------------------------------------------------------------
const worker = await loadModelInWorker(undefined, {
  pageThreadFallback: true,
  transferBuffers: false,
  weights: 'f32',
  onProgress: ({ loaded, total }) => show(`${loaded} / ${total}`),
});
const longInWorker = await worker.run('x', { attention: 'thumbnails' });
same<typeof longInWorker, ThumbnailRunResult>();
same<typeof worker, WorkerModel>();
same<typeof worker.thread, 'worker' | 'page'>();
const controller = new AbortController();
const inWorker = await worker.run(text, {
  reuse: null,
  topK: 3,
  signal: controller.signal,
  onProgress: ({ tokens, total }) => show(`${tokens} of ${total} tokens`),
});
same<typeof inWorker, RunResult>();
same<Awaited<ReturnType<WorkerModel['tokenize']>>, Token[]>();
same<Awaited<ReturnType<WorkerModel['tokenText']>>, string>();
same<Awaited<ReturnType<WorkerModel['inspectHead']>>, HeadInside>();
const workerInside = await worker.inspectHead(text, 0, 1);
const workerInsideOff = await worker.inspectHead(text, 1, 0, { ablate: [[0, 1]] });
const weightsOfLast: Float32Array = workerInside.attention.subarray((workerInside.T - 1) * workerInside.T);
// @ts-expect-error  a worker's inspectHead() is a promise
const notAwaitedInside: HeadInside = worker.inspectHead(text, 0, 1);
const workerReport = await worker.measureHeads(text, { signal: controller.signal, onProgress: (p) => show(String(p.fraction)) });
same<typeof workerReport, HeadsReport>();
same<Awaited<ReturnType<WorkerModel['patch']>>, PatchReport>();
same<Awaited<ReturnType<WorkerModel['explainScore']>>, ScoreSplit>();
same<Awaited<ReturnType<WorkerModel['circuits']>>, Circuits>();
same<Awaited<ReturnType<WorkerModel['attentionTile']>>, AttentionTile>();
same<Awaited<ReturnType<WorkerModel['attentionThumbnails']>>, AttentionThumbnails>();
same<Awaited<ReturnType<WorkerModel['memory']>>, ModelMemory>();
same<Awaited<ReturnType<WorkerModel['logitAttribution']>>, LogitAttribution>();
const workerOf: LogitAttribution = await worker.logitAttribution(0, 0, { text });
// @ts-expect-error  a worker's logitAttribution() is a promise
const notAwaitedParts: LogitAttribution = worker.logitAttribution(0, 0);
same<Awaited<ReturnType<WorkerModel['generate']>>, GenerateResult>();
const workerWritten = await worker.generate(text, { maxTokens: 5, temperature: 0, onToken: ({ result: r }) => show(r.text) });
show(workerWritten.text);
const state = await worker.cacheState();
same<typeof state, CacheState | null>();
if (state) show(`${state.onScreenCached} of ${state.onScreenTokens} tokens cached`);
// @ts-expect-error  a worker's run() is a promise
const notAwaited: RunResult = worker.run(text);
// @ts-expect-error  progress of a run counts tokens, not bytes
await worker.run(text, { onProgress: (p: LoadProgress) => p.loaded });
// @ts-expect-error  no such option
await loadModelInWorker('heads-4', { cores: 4 });
// threads: a number; what is in use is on the model, in the worker and on the page thread alike
const threaded = await loadModelInWorker('heads-4', { threads: 4 });
same<typeof threaded.threads, number>();
same<typeof threaded.info.threads, number>();
// @ts-expect-error  threads is a count, not a flag
await loadModelInWorker('heads-4', { threads: true });
try {
  await loadModelInWorker('heads-4', { worker: new Worker(new URL('./worker-thread.js', import.meta.url), { type: 'module' }) });
} catch (e) {
  if (e instanceof WorkerStartError) {
    same<typeof e.name, 'WorkerStartError'>();
    show(e.message);
  }
}
worker.dispose();

// ---- training ----------------------------------------------------------------------------------
const presets: TrainingPreset[] = await trainingPresets();
const trainer = await createTrainer({ preset: 'induction', config: { nLayer: 2, nHead: 4 }, steps: 200, lr: 3e-3, schedule: 'cosine' });
same<typeof trainer, HeadscopeTrainer>();
same<ReturnType<HeadscopeTrainer['step']>, Float32Array>();
const spec: TrainerSpec = trainer.spec;
same<typeof spec.optimizer, 'adamw' | 'sgd'>();
const shape: number = spec.config.nLayer * spec.config.nEmbd;
const losses = trainer.step(10);
trainer.step({ ids: [[1, 2, 3], [4, 5, 6]] });
trainer.step({ ids: [Int32Array.of(1, 2, 3)] });
const probe: TrainerProbe = trainer.probe();
same<typeof probe.ids, Int32Array>();
const lr: number = trainer.learningRate(trainer.stepsDone);
const trained = trainer.model();
same<typeof trained, HeadscopeModel>();
trained.run(text).attention(0, 0);
trained.dispose();
const exported = trainer.export();
same<typeof exported.weights, Uint8Array>();
await loadModel({ ...exported, name: 'trained' });
await createTrainer({ init: exported, task: 'text', text });
const threadedTrainer = await createTrainer({ threads: 2 });
same<typeof threadedTrainer.threads, number>();
trainer.dispose();
// @ts-expect-error  the optimizer is 'adamw' or 'sgd'
await createTrainer({ optimizer: 'adam' });
// @ts-expect-error  no such option (it is `lr`)
await createTrainer({ learningRate: 1e-3 });
// @ts-expect-error  a step's batch is rows of token ids
trainer.step({ ids: ['the chef'] });

const remote = await createTrainerInWorker({ preset: presets[0]?.name });
same<typeof remote, WorkerTrainer>();
const done = await remote.train({
  steps: 100,
  probeEvery: 25,
  signal: controller.signal,
  onProgress: (p: TrainProgress) => show(`step ${p.stepsDone}: ${p.losses.at(-1)} (${p.probe?.induction.length ?? 0} scores)`),
});
same<typeof done, { stepsDone: number; stopped: boolean }>();
same<Awaited<ReturnType<WorkerTrainer['step']>>, Float32Array>();
same<Awaited<ReturnType<WorkerTrainer['run']>>, RunResult>();
const remoteFiles = await remote.export();
same<typeof remoteFiles.weights, Uint8Array>();
// @ts-expect-error  train() needs the number of steps
await remote.train({ probeEvery: 10 });
remote.dispose();

// ---- what the heads do -------------------------------------------------------------------------
const grid = allHeadScores(inWorker);
same<typeof grid, HeadScores[][]>();
const scores = grid[0]?.[1];
if (scores) {
  const badges = headBadges(scores);
  same<typeof badges, Role[]>();
  const stricter = headBadges(scores, { ...ROLE_THRESHOLDS, previous: 0.7 });
  const inductionOnly = headBadges(scores, { induction: 0.3 });
  // @ts-expect-error  thresholds are per role of HeadScores
  headBadges(scores, { copying: 0.3 });
  show(badges.map((r) => `${r}: ${ROLE_DESCRIPTIONS[r]}`).join('; ') + stricter.join(','));
}
const oneHead: HeadScores = headScores(inWorker.attention(0, 1), inWorker.tokens.map((t) => t.id));
headScores(inWorker.attention(0, 1), Int32Array.from(inWorker.tokens, (t) => t.id), inWorker.T);
const rows = new HeadScoreRows();
const live: HeadScores[][] = rows.scores(inWorker);
const threshold: number = ROLE_THRESHOLDS.induction;
// @ts-expect-error  no such role
ROLE_THRESHOLDS.copying;
// @ts-expect-error  the thresholds are read-only
ROLE_THRESHOLDS.previous = 0.1;
const role: RoleInfo | undefined = ROLES_TABLE.find((r) => r.name === 'verb_to_subject');
if (role) show(`${role.label}: ${role.formula} >= ${role.threshold}${role.unit ?? ''} (${role.where.join(', ')})`);
const words: readonly string[] = INDUCTION_PROBE.words;

const anyModel: AnyModel = worker;   // the analysis functions take a page or a worker model
const probeText: string = await inductionProbeText(worker, { length: 12, seed: 2 });
const ranking = await knockoutRanking(worker, text, { ablate: switchedOff });
const top: KnockoutEntry | undefined = ranking.heads[0];
if (top) show(`L${top.layer}H${top.head}: +${top.delta.toFixed(3)} nats over ${ranking.baseLoss.toFixed(3)}`);
const induction = await inductionScores(worker, { copy: true, perList: true });
const copy: number = induction.copyAccuracy;
const spread: number[][] | undefined = induction.listSd;
const lists = await inductionWordLists(worker, { lists: 2 });
const listRun = await worker.run(lists[0]?.text ?? '');
const prefix: number[][] = prefixMatchingScores(listRun);
const parts = verbSubjectParts(text);
if (parts) show(`${parts.verb} -> ${parts.subject}`);
const ratios = verbSubjectRatios(inWorker);
same<typeof ratios, { ratio: number[][]; weight: number[][]; query: number; keys: number[] } | null>();
const verb = await verbSubjectScores(worker, [text]);
same<typeof verb.scores, number[][] | null>();
// @ts-expect-error  a knock-out needs a model, not a result
await knockoutRanking(inWorker, text);

// ---- the web components ------------------------------------------------------------------------
const widget = document.createElement('headscope-view');
same<typeof widget, HeadscopeViewElement>();
const found = document.querySelector('headscope-view');
same<typeof found, HeadscopeViewElement | null>();
widget.setAttribute('view', 'inside');
widget.setAttribute('inside', '7');
widget.setAttribute('step', '3');
widget.setAttribute('by', 'value');
widget.setAttribute('loading', 'lazy');
widget.setAttribute('view', 'combine');
widget.setAttribute('data-anything', 'still an HTMLElement');
widget.addEventListener('headscope-render', (e) => show(`${e.detail.T} tokens in the ${e.detail.view} view`));
widget.addEventListener('headscope-select', (e) => show(`layer ${e.detail.layer}, head ${e.detail.head}`));
document.body.append(widget);
const rendered: HeadscopeViewElement = await widget.ready;
same<typeof rendered.result, RunResult | null>();
const widgetState: HeadscopeViewState = widget.state;
same<typeof widgetState.view, 'grid' | 'heatmap' | 'lines' | 'inside' | 'combine'>();
const picture: Scene = widget.scene();
const svgFile: string = widget.exportSvg();
const pngFile: Blob = await widget.exportPng(2);
show(`${picture.items.length} items, ${svgFile.length} characters, ${pngFile.size} bytes`);
// @ts-expect-error  the result is read-only
widget.result = null;
// @ts-expect-error  a render event's detail has no head
widget.addEventListener('headscope-render', (e) => e.detail.head);
// @ts-expect-error  exportSvg() returns the document, not a promise
widget.exportSvg().then(show);

const labWidget = document.createElement('headscope-lab');
same<typeof labWidget, HeadscopeLabElement>();
labWidget.setAttribute('ablate', '0:1,1:3');
labWidget.setAttribute('loading', 'lazy');
labWidget.addEventListener('headscope-render', (e) => show(`${e.detail.T} tokens, ${e.detail.ablate.length} heads off`));
const panels: HeadscopeLabPanels | null = labWidget.lab;
panels?.setAblate([[0, 1]]);
panels?.toggle(1, 3);
await panels?.runKnockout();
same<Awaited<typeof labWidget.ready>, HeadscopeLabElement>();
// @ts-expect-error  ablate takes [layer, head] pairs
panels?.setAblate([0, 1]);

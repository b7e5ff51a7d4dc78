// Types for headscope-worker.js (the page's side; the model runs in worker-thread.js, inside the
// Worker): the headscope API running in a Web Worker.
// Every method returns a promise; results arrive as transferred buffers (not copied).
// dispose() terminates the worker, which frees the model's memory.
import type { HeadInside, InspectOptions, LoadProgress, ModelInfo, ModelSource, RunOptions, RunResult, ThumbnailRunOptions, ThumbnailRunResult, Token, HeadsOptions, HeadsReport, LogitAttribution, PatchOptions, PatchReport, ExplainOptions, ScoreSplit, Circuits, AttentionTile, AttentionTileOptions, AttentionThumbnails, ModelMemory, GenerateOptions, GenerateResult } from './headscope.js';

export interface WorkerLoadOptions {
  /** Called as model bytes arrive. */
  onProgress?: (progress: LoadProgress) => void;
  /** 'f32' (default), 'f16', 'q8' or 'auto': as LoadOptions.weights of loadModel(). */
  weights?: 'f32' | 'f16' | 'q8' | 'auto';
  /**
   * The engine's threads in the worker, 1 to 64: by default min(navigator.hardwareConcurrency, 8) on a
   * cross-origin-isolated page, else 1 (said once with console.info). As LoadOptions.threads.
   * The threaded engine makes its pool of threads - 1 pthread workers when it loads in the worker
   * (a worker cannot start while the thread that made it waits), so a later model or trainer in the
   * same worker cannot have more threads than that. The pthread workers load
   * headscope_wasm_threads.worker.js without CORS: from another origin, serve it with
   * `Cross-Origin-Resource-Policy: cross-origin` for a `require-corp` page.
   */
  threads?: number;
  /** As LoadOptions.attentionMaps of loadModel(). */
  attentionMaps?: boolean;
  /** As LoadOptions.memoryLimit of loadModel(). */
  memoryLimit?: number;
  /** As LoadOptions.activations of loadModel(). */
  activations?: 'all' | 'views' | 'auto';
  /**
   * Use this worker instead of starting worker-thread.js (beside this module). By default
   * worker-thread.js is started directly when it is on the page's origin, and through a same-origin
   * `blob:` module that imports it when it is not (files from a CDN). A worker given here must run
   * worker-thread.js.
   */
  worker?: Worker;
  /**
   * If no worker can be started (the page's Content-Security-Policy forbids the worker's URL in
   * worker-src, or worker-thread.js cannot be read), load the model on the page thread instead,
   * behind the same promise API (`thread` is then 'page'), and say why once with console.info.
   * Default false: the promise rejects with a WorkerStartError.
   */
  pageThreadFallback?: boolean;
  /**
   * With a source given as buffers: move them to the worker instead of copying them (a checkpoint
   * of hundreds of MB is not held twice). The caller's ArrayBuffers are left empty (detached).
   */
  transferBuffers?: boolean;
}

/** The worker could not be started; the model was never loaded. */
export declare class WorkerStartError extends Error {
  readonly name: 'WorkerStartError';
}

export interface WorkerModel {
  /** Configuration and size of the loaded model. Throws after dispose(). */
  readonly info: ModelInfo;
  /** ModelInfo.threads: the threads in use, in the worker. */
  readonly threads: number;
  /** True after dispose(). */
  readonly disposed: boolean;
  /** Where the model runs: in a Web Worker, or on the page thread (pageThreadFallback). */
  readonly thread: 'worker' | 'page';
  /**
   * As HeadscopeModel.run, in the worker. Rejects with an Error carrying the engine's message.
   * A long run (about 200 ms of work or more: a big model on a long text) goes in steps of tokens:
   * `onProgress` hears about each, and aborting `signal` stops it between steps (the promise then
   * rejects with an Error named 'AbortError'). The result equals a run in one go.
   */
  run(text: string, options: ThumbnailRunOptions & {
    onProgress?: (progress: { tokens: number; total: number }) => void;
    signal?: AbortSignal;
  }): Promise<ThumbnailRunResult>;
  run(text: string, options?: RunOptions & {
    onProgress?: (progress: { tokens: number; total: number }) => void;
    signal?: AbortSignal;
  }): Promise<RunResult>;
  /**
   * As HeadscopeModel.inspectHead, in the worker (its arrays transferred). Like run(), it leaves the
   * text in the worker's engine cache; results already delivered are not affected (a later
   * run({ reuse }) still patches them correctly). Rejects with the engine's Error for a layer or
   * head out of range and for empty text.
   */
  inspectHead(text: string, layer: number, head: number, options?: InspectOptions): Promise<HeadInside>;
  /**
   * As HeadscopeModel.measureHeads, in the worker (the report's arrays transferred): onProgress after
   * each chunk (a promise it returns is not waited for), aborting `signal` stops it between chunks
   * (an Error named 'AbortError'). Runs, inspectHead() and logitAttribution() sent meanwhile are
   * answered between its chunks rather than after it.
   */
  measureHeads(text: string, options?: HeadsOptions): Promise<HeadsReport>;
  /** As HeadscopeModel.patch, in the worker (the reports' arrays transferred); the page's runs sent meanwhile are answered between its chunks. */
  patch(options: PatchOptions): Promise<PatchReport>;
  /** As HeadscopeModel.explainScore, in the worker (its arrays transferred). */
  explainScore(text: string, layer: number, head: number, query: number, key: number, options?: ExplainOptions): Promise<ScoreSplit>;
  /** As HeadscopeModel.circuits, in the worker. */
  circuits(options?: { seeds?: number }): Promise<Circuits>;
  /** As HeadscopeModel.attentionTile, in the worker (its values transferred). */
  attentionTile(text: string, layer: number, head: number, options?: AttentionTileOptions): Promise<AttentionTile>;
  /** As HeadscopeModel.attentionThumbnails, in the worker (its values transferred). */
  attentionThumbnails(text: string, options?: { size?: number; ablate?: Array<[number, number]> }): Promise<AttentionThumbnails>;
  /** As HeadscopeModel.memory, in the worker. */
  memory(): Promise<ModelMemory>;
  /**
   * As HeadscopeModel.generate, in the worker: the same ids as on the page thread for the same
   * options. With onToken, each token's result arrives with only its new attention rows, and the
   * worker waits for onToken (and a promise it returns) before the next token, answering runs,
   * inspectHead(), tokenize() and tokenText() sent meanwhile; a token that arrives after `signal`
   * aborted is neither handed to onToken nor part of the value. Without onToken, those requests are
   * answered at the generation's pauses (about every 12 ms).
   */
  generate(text: string, options: GenerateOptions): Promise<GenerateResult>;
  /** As HeadscopeModel.logitAttribution, in the worker: the last run()'s logit (or `of`'s) split into its parts. */
  logitAttribution(position: number, token: number, of?: { text: string; ablate?: ReadonlyArray<readonly [number, number]> }): Promise<LogitAttribution>;
  /** As HeadscopeModel.tokenize, in the worker. */
  tokenize(text: string): Promise<Token[]>;
  /** As HeadscopeModel.tokenText, in the worker. */
  tokenText(id: number): Promise<string>;
  /**
   * What the worker's engine cache holds for the text on screen (the last text run with `reuse`).
   * Side runs (the lab's probes, knock-outs) take the cache; after 250 ms without requests the worker
   * gives it back to the text on screen, in steps that stop when a request arrives, so the reader's
   * next keystroke on a long text computes only the new tokens (texts within the context, on models
   * where the restored tokens are more than about 50 ms of work). Answered at once, even during a
   * long run, and without interrupting a restore. null on the page thread, which keeps no such cache.
   */
  cacheState(): Promise<CacheState | null>;
  /** Terminates the worker; pending and later calls reject. Safe to call twice. */
  dispose(): void;
}

export interface CacheState {
  /** Tokens of the last run or prefill held in the engine's cache. */
  cachedTokens: number;
  /** Tokens of the text on screen (0 when no run passed `reuse`). */
  onScreenTokens: number;
  /** How many of them, from the start, the cache holds: onScreenTokens once fully restored. */
  onScreenCached: number;
}

/** Starts a module worker and loads a model in it (same sources as loadModel). */
export declare function loadModelInWorker(source?: ModelSource, options?: WorkerLoadOptions): Promise<WorkerModel>;

export interface TrainProgress {
  stepsDone: number;
  /** The losses of the steps in this chunk. */
  losses: Float32Array;
  /** The learning rate of the chunk's last step. */
  lr: number;
  /** Training tokens per second over the chunk. */
  tokensPerSecond: number;
  /** Every probeEvery steps and at the end. */
  probe?: import('./headscope.js').TrainerProbe;
}

/** A training run in its own Web Worker, from createTrainerInWorker() (an interface: the class itself is not exported). */
export interface WorkerTrainer {
  readonly spec: import('./headscope.js').TrainerSpec;
  readonly stepsDone: number;
  /** The threads forward and backward run on, in the worker. */
  readonly threads: number;
  readonly disposed: boolean;
  /** Trains `steps` more steps in chunks of about a frame; aborting `signal` pauses (resolves with stopped: true). */
  train(options: { steps: number; probeEvery?: number; onProgress?: (p: TrainProgress) => void; signal?: AbortSignal }): Promise<{ stepsDone: number; stopped: boolean }>;
  step(n?: number | { ids: import('./headscope.js').TokenIdRows }): Promise<Float32Array>;
  probe(): Promise<import('./headscope.js').TrainerProbe>;
  /** Runs the trained model (its current weights) on `text`. */
  run(text: string, options?: import('./headscope.js').RunOptions): Promise<import('./headscope.js').RunResult>;
  export(): Promise<{ config: string; weights: Uint8Array; vocab: string; merges: string }>;
  dispose(): void;
}

/** Starts a training run in a new module Web Worker. Rejects with a WorkerStartError if no worker can start. */
export declare function createTrainerInWorker(options?: import('./headscope.js').TrainerOptions, init?: { worker?: Worker }): Promise<WorkerTrainer>;

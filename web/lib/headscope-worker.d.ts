// Types for headscope-worker.js: the headscope API running in a Web Worker.
// Every method returns a promise; results arrive as transferred buffers (not copied).
// dispose() terminates the worker, which frees the model's memory.
import type { LoadProgress, ModelInfo, ModelSource, RunOptions, RunResult, Token } from './headscope.js';

export interface WorkerLoadOptions {
  /** Called as model bytes arrive. */
  onProgress?: (progress: LoadProgress) => void;
  /** Use this worker instead of starting `new Worker(new URL('./worker.js', import.meta.url), {type: 'module'})`. */
  worker?: Worker;
}

export interface WorkerModel {
  /** Configuration and size of the loaded model. Throws after dispose(). */
  readonly info: ModelInfo;
  /** True after dispose(). */
  readonly disposed: boolean;
  /** As HeadscopeModel.run, in the worker. Rejects with an Error carrying the engine's message. */
  run(text: string, options?: RunOptions): Promise<RunResult>;
  /** As HeadscopeModel.tokenize, in the worker. */
  tokenize(text: string): Promise<Token[]>;
  /** As HeadscopeModel.tokenText, in the worker. */
  tokenText(id: number): Promise<string>;
  /** Terminates the worker; pending and later calls reject. Safe to call twice. */
  dispose(): void;
}

/** Starts a module worker and loads a model in it (same sources as loadModel). */
export declare function loadModelInWorker(source?: ModelSource, options?: WorkerLoadOptions): Promise<WorkerModel>;

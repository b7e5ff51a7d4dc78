// Types for headscope's JavaScript API (headscope.js).
//
// Memory: a model lives in WebAssembly memory, which JavaScript's garbage collector does not free.
// Call `dispose()` when done with a model. Every array a result holds is a copy (its own
// ArrayBuffer), never a view into wasm memory, so it stays valid after later runs and memory growth.
// Errors from the engine arrive as `Error` with its message, and whatever was loaded stays usable;
// many runs in a row, failing ones included, leave the wasm heap as it was.
//
// Where it runs: browsers, Web Workers and Node 20, as an ES module built without eval (a
// Content-Security-Policy needs `'wasm-unsafe-eval'`, not `'unsafe-eval'`). It finds its .wasm and
// the shipped models beside itself (`new URL(..., import.meta.url)`, which bundlers such as Vite and
// webpack 5 follow).

/**
 * Names of the models shipped inside the package (folders under `headscope/models/`), read from
 * `headscope/models/index.json`, which also gives each one's family, shape, size and losses.
 */
export declare const shippedModels: readonly string[];
/** The shipped model `loadModel()` uses when called without a source: `"headscope-base"`. */
export declare const defaultModelName: string;

/** The four files of a model in the Hugging Face GPT-2 layout, as buffers or strings. */
export interface ModelFiles {
  /** config.json (GPT2Config keys). */
  config: ArrayBuffer | ArrayBufferView | string;
  /**
   * model.safetensors; F32, F16 or BF16 tensors with GPT-2 names. A Blob (a File the reader picked)
   * is read a tensor at a time in a Worker (loadModelInWorker), never whole, so it may pass 2 GiB;
   * on the page thread it is read whole first.
   */
  weights: ArrayBuffer | ArrayBufferView | Blob;
  /** vocab.json: GPT-2 byte-level BPE vocabulary. */
  vocab: ArrayBuffer | ArrayBufferView | string;
  /** merges.txt: BPE merges by rank. */
  merges: ArrayBuffer | ArrayBufferView | string;
  /** A name for `info.name`; defaults to "custom". */
  name?: string;
}

/** A Llama-family model's files (config.json's model_type "llama" or "qwen3"), as buffers or text. */
export interface TokenizerJsonModelFiles {
  /** config.json (LlamaConfig's or Qwen3Config's keys). */
  config: ArrayBuffer | ArrayBufferView | string;
  /** model.safetensors; F32, F16 or BF16 tensors with Hugging Face's names; a Blob as in ModelFiles. */
  weights: ArrayBuffer | ArrayBufferView | Blob;
  /** tokenizer.json: Hugging Face's byte-level BPE tokenizer (Llama 3's, Qwen3's, SmolLM's). */
  tokenizer: ArrayBuffer | ArrayBufferView | string;
  /** A name for `info.name`; defaults to "custom". */
  name?: string;
}

/**
 * Where to load a model from: a shipped model's name, the URL of a folder holding config.json,
 * model.safetensors and the tokenizer's files (vocab.json and merges.txt for GPT-2, tokenizer.json
 * for the Llama family, as its config.json's model_type says; http(s): in browsers, file: in
 * Node), or the files.
 */
export type ModelSource = string | URL | ModelFiles | TokenizerJsonModelFiles;

export interface LoadProgress {
  /** Bytes received so far, over all four files. */
  loaded: number;
  /** Bytes expected; 0 while unknown (a server that sends no Content-Length). */
  total: number;
}

export interface LoadOptions {
  /** Called as bytes arrive, for a progress bar. */
  onProgress?: (progress: LoadProgress) => void;
  /** Aborts the downloads. */
  signal?: AbortSignal;
  /**
   * How the large weight matrices (every block's linear layers, the token embedding / LM head) are
   * held: 'f32' (default) or 'f16', half precision in about half the memory. The kernels widen F16
   * to float32 as they read it, so results equal float32 on the F16-rounded weights (logits differ
   * from 'f32' by about 1e-3 of their range). An F16 checkpoint's values are kept exactly. 'auto':
   * as the checkpoint stores its matrices, 'f16' for an F16 or BF16 file (ModelInfo.weights says
   * which). 'q8': every block's four linear layers in 8 bits (int8 per output column, inputs quantized
   * per token to 7 bits as each product runs; the embedding and LM head in F16), about a quarter of
   * float32's memory: on the shipped models the next-token distribution moves by a mean KL divergence
   * of 0.001-0.005 nats and an attention weight by at most 0.12 (cpp/README.md, "8-bit weights").
   * Anything else rejects with an Error.
   */
  weights?: 'f32' | 'f16' | 'q8' | 'auto';
  /**
   * Threads the engine splits each run over: a whole number from 1 to 64 (else an Error). They run
   * where the threaded build can: in a Web Worker (headscope/worker) of a cross-origin-isolated page
   * (COOP same-origin, COEP require-corp or credentialless) on a device with more than one core; the
   * default there is min(navigator.hardwareConcurrency, 8). Elsewhere (the page thread, a page
   * without isolation, Node) the single-threaded build runs, and it says why once with console.info
   * unless 1 was asked for. Results are bit-identical on any number of threads. ModelInfo.threads
   * says what is in use.
   */
  threads?: number;
  /**
   * Keep every head's full attention map after a run (default true). false: the engine keeps no map
   * and recomputes the rows it is asked for from its key cache (the same floats): a run's memory then
   * grows with the text, not its square, so a Llama-family model's context (what fits) is longer.
   * Pull what a view draws with attentionTile() and run(text, { attention: 'thumbnails' }); run()'s
   * default still returns every map, recomputed, which for a long text is what does not fit.
   */
  attentionMaps?: boolean;
  /**
   * The memory the model may use, in bytes: its weights, a text's activations and a reserve
   * (ModelMemory says how it is spent). 0 (default): all the engine's WebAssembly memory can grow to
   * (4 GB; natively, physical memory). A smaller figure suits a browser or a page that reserves less.
   * Weights that do not fit are refused at load with their sizes and the options (weights: 'f16');
   * a Llama-family model's context is what fits the rest. Anything but a whole number >= 0 is an Error.
   */
  memoryLimit?: number;
  /**
   * What a run keeps of a text's activations. 'all' (default): every layer's residual stream, queries,
   * keys, values and head outputs, which hiddenStates, inspectHead, logitAttribution, explainScore and
   * patch read. 'views': only what the views read (every layer's queries, in F16, and key/value
   * cache, the thumbnails, role scores and write sizes), about 30% of 'all' for the Llama family's
   * shapes, so a long text fits in less memory; logits, role scores, value sizes, the run's thumbnails
   * and typing are the same to the bit, maps and tiles recomputed from the F16 queries within their
   * rounding (the C++ header model.hpp states the bound), and the analyses above reject with an Error
   * naming this option. 'auto': 'all'
   * while a text's activations take at most a quarter of the memory limit, 'views' past that
   * (ModelMemory.fullActivationTokens says where). Anything else is an Error.
   */
  activations?: 'all' | 'views' | 'auto';
}

/**
 * How the engine's memory is spent (HeadscopeModel.memory()): the limit, less the weights, what the
 * engine held before them and a reserve, is the budget of a text's activations. Fixed at load.
 */
export interface ModelMemory {
  /** The whole: LoadOptions.memoryLimit, or the engine's maximum memory. */
  limitBytes: number;
  weightBytes: number;
  /** What the engine's memory held when the model was loaded (other models, the tokenizer). */
  inUseAtLoadBytes: number;
  /** Kept free: results on their way out, the allocator's slack (a sixteenth of the limit, 64 to 256 MB). */
  reserveBytes: number;
  /** The longest text the model keeps, in tokens (config.nPositions): a longer one is cut to it. */
  contextTokens: number;
  /** Activations allocated now, for capacityTokens positions. */
  activationBytes: number;
  capacityTokens: number;
  /** The limit on a text's activations: the context (config.nPositions) is at most what fits it. */
  activationBudgetBytes: number;
  /** The activations a text as long as the context needs. */
  bytesAtContext: number;
  attentionMaps: boolean;
  /** LoadOptions.activations. */
  activations: 'all' | 'views' | 'auto';
  /** The activations allocated now keep only the views' (a run's analyses of every layer reject). */
  viewsOnly: boolean;
  /** The longest text whose activations are kept whole: the context with 'all', 0 with 'views'. */
  fullActivationTokens: number;
}

/** Loads the WebAssembly module (once) and a model. Rejects with an Error naming the problem. */
export declare function loadModel(source?: ModelSource, options?: LoadOptions): Promise<HeadscopeModel>;

/** Offset of attention weight (layer, head, query q, key k) in result.attentionAll, for any result (any stride). */
export declare function attentionIndex(result: RunResult, layer: number, head: number, q: number, k: number): number;
/** Rows and columns of each head's block in result.attentionAll: result.stride, or T for data without one. */
export declare function strideOf(result: RunResult): number;

/** Bytes currently allocated in the wasm heap (for leak checks in long-running pages). */
export declare function wasmHeapUsedBytes(): Promise<number>;
/** Size of the engine's WebAssembly memory in bytes (it only grows). Loads the engine if needed. */
export declare function wasmMemoryBytes(): Promise<number>;

export interface ModelConfig {
  /** config.json's model_type: "gpt2", "llama" or "qwen3". */
  modelType: string;
  vocabSize: number;
  /** Context length: a longer text keeps its last tokens, cut in steps of nPositions / 8 (so between 7/8 of nPositions and all of it remain). */
  nPositions: number;
  nEmbd: number;
  nLayer: number;
  /** Query heads per layer: every view has one map per query head. */
  nHead: number;
  /** Key/value heads per layer (nHead for GPT-2): query head h reads key/value head
   *  Math.floor(h / (nHead / nKvHead)), so nHead / nKvHead query heads share each one. */
  nKvHead: number;
  nInner: number;
  /** The width of each head's query, key and value (nEmbd / nHead unless config.json says head_dim). */
  headSize: number;
  /** LayerNorm's epsilon (GPT-2) or RMSNorm's (the Llama family). */
  layerNormEpsilon: number;
  activation: string;
  /** True when the LM head is the token embedding (always for GPT-2). */
  tiedEmbeddings: boolean;
  /** What each token adds to the key/value cache in float32: 2 x nLayer x nKvHead x headSize x 4 bytes
   *  (sharing key/value heads divides it by nHead / nKvHead). */
  kvCacheBytesPerToken: number;
  /** Tokens the tokenizer puts before every text (1 for Llama 3's <|begin_of_text|>, else 0); a text
   *  longer than the context keeps them first and is cut after them. */
  prefixTokens: number;
}

export interface ModelInfo {
  /** The shipped model's name, the folder's last path segment, or ModelFiles.name. */
  name: string;
  config: ModelConfig;
  parameterCount: number;
  /** Bytes of weights held in wasm memory, in their storage. */
  weightBytes: number;
  /** The storage of the large weight matrices (LoadOptions.weights). */
  weights: 'f32' | 'f16' | 'q8';
  /**
   * Which kernels this build runs: `{ arch: "sse4.1", floatLanes: 4, simd: true }` is SIMD128;
   * `relaxedMadd: true` is the relaxed-SIMD build (fused multiply-add), loaded where the engine
   * validates relaxed SIMD (Chromium; node with --experimental-wasm-relaxed-simd).
   */
  simd: { arch: string; floatLanes: number; simd: boolean; relaxedMadd: boolean };
  /** The threads this model's runs are split over (LoadOptions.threads, as available). */
  threads: number;
  /** LoadOptions.attentionMaps: whether runs keep every head's full map. */
  attentionMaps: boolean;
}

export interface Token {
  /** The token's text for display (U+FFFD where a token holds part of a character). */
  text: string;
  /** Vocabulary id. */
  id: number;
  /** [start, end): UTF-16 indices into the text passed to run(). A token that holds part of a
   *  character (emoji are often split) covers that whole character, so neighbours may overlap. */
  start: number;
  end: number;
}

export interface RunOptions {
  /** [layer, head] pairs whose outputs are removed before W_O: the model runs without them. */
  ablate?: ReadonlyArray<readonly [number, number]>;
  /** How many next-token predictions topNext holds (default 10). */
  topK?: number;
  /** Also compute logits at every position and the mean next-token loss on the text (`loss`). */
  allLogits?: boolean;
  /** Also return every head's value sizes (`valueNorms`): about one W_O product per layer the
   *  first time, then only the new tokens' while typing at the end (the engine keeps them with its cache). */
  valueNorms?: boolean;
  /** What the result holds of the attention maps: 'all' (the default), every head's full map
   *  (attentionAll, L x H x T x T floats). ThumbnailRunOptions asks for thumbnails instead. */
  attention?: 'all';
  /**
   * An earlier result of this model that the caller no longer needs (typically the one on screen,
   * while the reader types). Attention rows before the first changed token are the same numbers, so
   * only the rows from there on are copied out of the engine (and, in a Worker, sent across) and
   * written into reuse's buffer, which the new result then owns. Its blocks are kept wider than T
   * (`stride`), so that tokens typed at the end fit. The tokens before the first changed one are not
   * sent again either (the new result's are reuse's token objects), nor the contribution norms'
   * columns before it: the new result's contributionNorms are reuse's array, or when the token count
   * changed a new array over reuse's buffer if that buffer was kept with room for tokens typed later,
   * else over a new buffer kept so (the array's `buffer` may then be longer than the array: read the
   * array, not its buffer). `reuse` must not be read afterwards: its accessors throw. Ignored when the switched-off heads
   * differ or the new text does not fit.
   */
  reuse?: RunResult | null;
  /**
   * Runs the text with head (layer, head)'s output before W_O (z) taken from a run of `from` at every
   * position (activation patching of one head, as a whole run: every later layer recomputed, with the
   * same switched-off heads). `from` must have as many tokens as the text, within the context. Such a
   * run computes every token (no cache is kept across it) and `reuse` is ignored.
   */
  patch?: RunPatch | null;
}

/**
 * run(text, { attention: 'thumbnails' }): no full map in the result, every head's thumbnail instead
 * (at most 128 x 128 max-pooled cells a head, which the forward pass pooled as it went), so that a
 * long text's result stays small; pull exact values with attentionTile(). With `reuse` (an earlier
 * thumbnails result at the same bin and switched-off heads) only each head's cell rows from the
 * first changed token's on are copied out of the engine (and, in a Worker, sent across), and written
 * into reuse's thumbnails, which the new result then owns (when the text grew or shrank by a cell, a
 * cell row holding `thumbnailBin` tokens, as a new array over reuse's buffer or a new one, as the
 * contribution norms are). Its tokens and contribution norms as with
 * RunOptions.reuse, and, as there, `reuse` must not be read afterwards.
 */
export interface ThumbnailRunOptions extends Omit<RunOptions, 'attention'> {
  attention: 'thumbnails';
  /**
   * Also return these heads' map rows from the first token whose id differs from `ids` (the tokens of
   * the rows the caller holds already; empty: every row), so that a view that shows a few heads of a
   * long text gets only a typed token's new rows, with the run (ThumbnailRunResult.pulledRows). With
   * `window`, only the rows of the `size` tokens around token `around` (null or past the text: the
   * last), centred on it and moved inside the text at either end: what a view that shows a window
   * of a long text reads, never the whole map.
   */
  pull?: {
    heads: ReadonlyArray<readonly [number, number]>;
    ids: Int32Array | ReadonlyArray<number>;
    window?: { around?: number | null; size: number } | null;
  } | null;
}

/** RunOptions.patch: the text whose run gives head (layer, head) its output. */
export interface RunPatch {
  from: string;
  layer: number;
  head: number;
}

export interface Prediction {
  id: number;
  token: string;
  prob: number;
}

export interface RunResult {
  /** The text as run; lone UTF-16 surrogates were replaced by U+FFFD (same length). */
  text: string;
  /** The tokens the model saw, in order. */
  tokens: Token[];
  /** Number of tokens the model saw. */
  T: number;
  nLayer: number;
  nHead: number;
  /** Key/value heads per layer (info.config.nKvHead): query head h reads Math.floor(h / (nHead / nKvHead)). */
  nKvHead: number;
  /** Tokens cut from the START of the text because it exceeded the context (nPositions). */
  droppedTokens: number;
  /** Leading tokens whose keys and values were reused from the previous run (typing at the end). */
  reusedTokens: number;
  /** Attention probabilities, [nLayer, nHead, stride, stride]: row = query token, column = key
   *  token (both < T); rows sum to 1 and entries above the diagonal are 0 (a token cannot see later
   *  tokens). stride is T unless the run was given `reuse`; read through attention() or
   *  attentionIndex() (exported here) to be independent of it. (ThumbnailRunResult has none.) */
  attentionAll: Float32Array;
  /** One head's thumbnail (ThumbnailRunResult.thumbnail); throws on a result with every map. */
  thumbnail(layer: number, head: number): Float32Array;
  /** Rows and columns of each head's block in attentionAll: T, or more for a result that takes typed tokens (`reuse`). */
  stride: number;
  /** Attention rows before this one came from the `reuse` result (0: every row was copied from the engine). */
  rowsFrom: number;
  /** The switched-off heads of this run. */
  ablate: Array<[number, number]>;
  /** RunOptions.patch as run, or null. */
  patch: RunPatch | null;
  /** One head's T x T attention (a copy). Throws on a layer or head out of range, and on a result
   *  run with { attention: 'thumbnails' }. */
  attention(layer: number, head: number): Float32Array;
  /** [nLayer, nHead, T]: the L2 norm of what each head writes into the residual stream at each
   *  token (its output times its rows of W_O). A layer's attention output is the sum of these
   *  vectors plus W_O's bias. */
  contributionNorms: Float32Array;
  /** One head's contribution norms, T floats (a copy). */
  headContribution(layer: number, head: number): Float32Array;
  /** [nLayer, nHead, T], only with the `valueNorms` option: || v_j W_O^h ||, the size of what head h
   *  moves from token j when it attends there, from this run's own values (switched-off heads
   *  included: what they would move). Weighting attention by it shows what a head writes. */
  valueNorms?: Float32Array;
  /** One head's value sizes, T floats (a copy). Throws on a layer or head out of range, or a run
   *  without the `valueNorms` option. */
  headValueNorms(layer: number, head: number): Float32Array;
  /** Logits for the token after the last one, vocabSize floats. */
  logitsLast: Float32Array;
  /** The topK most likely next tokens, most likely first. */
  topNext: Prediction[];
  /** Mean next-token cross-entropy (nats) over the text; only with `allLogits`. NaN when T = 1. */
  loss?: number;
}

/** What run(text, { attention: 'thumbnails' }) returns: no full map, every head's thumbnail instead. */
export interface ThumbnailRunResult extends Omit<RunResult, 'attentionAll'> {
  attentionAll?: undefined;
  /** [nLayer, nHead, thumbnailCells, thumbnailCells], each cell the largest weight of a thumbnailBin x
   *  thumbnailBin block of the head's map (thumbnailBin: the smallest power of two that fits the map
   *  in 128 cells; 1 for T <= 128). The engine pooled them while the forward pass computed each row. */
  thumbnails: Float32Array;
  thumbnailBin: number;
  thumbnailCells: number;
  /** One head's thumbnail, thumbnailCells x thumbnailCells (a copy). */
  thumbnail(layer: number, head: number): Float32Array;
  /** [nLayer, nHead, 6]: every head's role scores (previous, first, self, duplicate, induction, broad:
   *  headscope/analysis's headScores() in that order), counted by the forward pass row by row. */
  roleScores: Float64Array;
  /** With ThumbnailRunOptions.pull: the heads asked for, the first row sent, the row after the last
   *  (T, or the end of pull.window), and their rows [pulledFrom, pulledTo) of every column, heads one
   *  after the other ((pulledTo - pulledFrom) x T floats each). */
  pulledHeads?: Array<[number, number]>;
  pulledFrom?: number;
  pulledTo?: number;
  pulledRows?: Float32Array;
}

/** Options of generate(); see GenerateResult for what it resolves to. Bad values are Errors naming the option and its range. */
export interface GenerateOptions {
  /** How many tokens to write: a whole number within [1, 100000] (required). */
  maxTokens: number;
  /** Within [0, 10000], default 1: tokens are drawn from softmax(logits / temperature); 0 always takes the most likely token (ties to the lowest id). */
  temperature?: number;
  /** A whole number >= 0, default 0 (off): draw only among the topK most likely tokens. */
  topK?: number;
  /** Within (0, 1], default 1 (off): draw only among the fewest most likely tokens whose probabilities reach topP (the nucleus). */
  topP?: number;
  /** A whole number within [0, 2^53 - 1], default 0. One seed gives one continuation, here, in the Worker and in the CLI (`headscope generate --seed`). */
  seed?: number;
  /** [layer, head] pairs switched off in every step: the model writes as it runs without them. */
  ablate?: ReadonlyArray<readonly [number, number]>;
  /** Each onToken result also holds every head's value sizes (RunOptions.valueNorms). */
  valueNorms?: boolean;
  /**
   * Called after each token with the run result of the text so far, so that views can follow the
   * writing. Each such result takes the previous one's attention buffer (only the new rows are
   * copied out of the engine, and in a Worker sent across): read only the latest; earlier ones'
   * accessors throw. A returned promise is awaited before the next token (in a Worker too), so a
   * page can paint each token. An exception stops the generation and rejects with it.
   */
  onToken?: (token: GeneratedToken) => void | Promise<void>;
  /** An earlier result the caller no longer needs (the one on screen): the first token's rows are written into its buffer, as run()'s `reuse`. */
  reuse?: RunResult | null;
  /**
   * Aborting it stops the generation before the next token. It then RESOLVES (not rejects) with
   * what was written so far, `stopped: true`: with onToken, exactly the tokens onToken was called for.
   */
  signal?: AbortSignal;
}

/** The distribution a token was drawn from: after temperature, top-k and top-p, most likely first (ties by lower id), summing to 1. */
export interface SamplingDistribution {
  ids: Int32Array;
  probs: Float64Array;
  /** Its first 10 tokens with their display texts. */
  top: Prediction[];
}

/** What onToken hears about each token written. */
export interface GeneratedToken {
  /** 0 for the first token written. */
  index: number;
  id: number;
  /** Its display text (U+FFFD where it holds part of a character). */
  token: string;
  /** Its probability in `distribution`. */
  prob: number;
  distribution: SamplingDistribution;
  /** Milliseconds the engine took for this token: the draw, the model's step and copying out the result. */
  ms: number;
  /** The run of the text so far, this token included, as run() of it would give (its tokens are the ids written). */
  result: RunResult;
}

/** What generate() resolves to. */
export interface GenerateResult {
  /** The prompt, then the tokens written, decoded (U+FFFD where the bytes end inside a character). */
  text: string;
  /** Every token id: the prompt's, then the written ones. */
  ids: number[];
  /** The ids written. */
  generatedIds: number[];
  /** Every token, prompt then written, with spans into `text` (not cut to the context). */
  tokens: Token[];
  /** How many of `tokens` are the prompt's. */
  promptTokens: number;
  /** True when `signal` stopped it before maxTokens. */
  stopped: boolean;
}

export interface InspectOptions {
  /** [layer, head] pairs switched off for the run, as RunOptions.ablate: heads off in earlier layers
   *  change the inspected head's input; the inspected head itself off writes nothing (`out` is 0). */
  ablate?: ReadonlyArray<readonly [number, number]>;
}

/**
 * One head's computation on a text (HeadscopeModel.inspectHead), from the forward pass itself: the
 * same buffers and kernels that give the attention maps. Every array is row-major and its own copy.
 */
export interface HeadInside {
  layer: number;
  head: number;
  /** The text as run (lone surrogates replaced, as in RunResult.text). */
  text: string;
  /** The heads switched off for the run (InspectOptions.ablate, a copy). */
  ablate: Array<[number, number]>;
  /** The norm before the head: 'layer norm' (GPT-2) or 'RMSNorm' (the Llama family). */
  norm: string;
  /** True when q and k are rotated by their positions (the Llama family): q and k are the rotated ones. */
  rotary: boolean;
  /** The tokens the model saw (a text longer than the context keeps its last tokens, as run() does). */
  tokens: Token[];
  /** Number of tokens. */
  T: number;
  /** d_head: the width of the head's query, key and value. */
  headSize: number;
  /** The width of the residual stream. */
  nEmbd: number;
  /** [T, headSize]: each token's query vector (its layer-normed input times the head's W_Q). */
  q: Float32Array;
  /** [T, headSize]: each token's key vector. */
  k: Float32Array;
  /** [T, headSize]: each token's value vector. */
  v: Float32Array;
  /** [T, T]: q_i . k_j / sqrt(headSize) for j <= i; -Infinity where j > i (a later token, masked). */
  scores: Float32Array;
  /** [T, T]: the softmax of each row of scores: the head's attention map (equal to run()'s). */
  attention: Float32Array;
  /** [T, headSize]: z_i = sum_j attention_ij v_j. */
  z: Float32Array;
  /** [T, nEmbd]: z_i W_O^h, the head's write into the residual stream (its share of the layer's update). */
  out: Float32Array;
  /** [T]: ||v_j W_O^h||, the size of what the head would move from token j at weight 1. */
  valueNorm: Float32Array;
}

/** Options of measureHeads(). Whole numbers >= 0; anything else is an Error naming the option. */
export interface HeadsOptions {
  /** Seeded random orders for the band beside the greedy curve (default 8; 0: none). */
  randomOrders?: number;
  /** Seed of the random orders (default 0): the same seed gives the CLI's orders (`headscope heads --seed`). */
  seed?: number;
  /**
   * Up to this many heads (nLayer x nHead) the greedy search tries every remaining head at each
   * step. Default 16 in this API (the head-count family exactly, the default model's 32 heads by
   * gate gradients: about 1.5x faster); the CLI's default is 64.
   */
  exactLimit?: number;
  /** Above exactLimit: heads measured per step, the best by gate gradients recomputed with the heads removed so far (default 4). */
  candidates?: number;
  /** After each chunk of model runs (fraction 1 at the end). On the page thread a returned promise is awaited before the next chunk. */
  onProgress?: (progress: HeadsProgress) => void | Promise<void>;
  /** Aborting it stops the measurement between chunks: the promise rejects with an Error named 'AbortError'. */
  signal?: AbortSignal;
  /** How long a chunk of steps lasts before the page may paint, in ms (default 12; one model run may take longer). */
  chunkMs?: number;
}

export interface HeadsProgress {
  /** Model runs done, as a fraction of those planned (0..1, never decreasing; 1 when done). */
  fraction: number;
}

/**
 * Which heads a model needs on a text (measureHeads(); the CLI's `headscope heads --json`). Losses
 * are mean next-token cross-entropies in nats over the text's tokens - 1 predictions. Heads are
 * counted row-major: index layer * nHead + head.
 */
export interface HeadsReport {
  nLayer: number;
  nHead: number;
  /** Tokens measured (after droppedTokens were cut from the start to fit the context, as run() cuts). */
  tokens: number;
  droppedTokens: number;
  /** "greedy, exact" or "greedy, gate gradients (every K heads) + N measured per step". */
  method: string;
  /** The loss with every head on. */
  loss: number;
  /** [nLayer * nHead]: dL/dxi_h at xi = 1, where the gate xi_h scales head h's output (Michel et al. 2019). */
  gateGrad: Float64Array;
  /** [nLayer * nHead]: the loss with head h alone switched off, minus loss. */
  ablationDelta: Float64Array;
  /** Every head once, in the order the greedy search switched them off (the least harmful first). */
  order: Array<[number, number]>;
  /** [nLayer * nHead + 1]: the loss with the first k heads of `order` off; prunedLoss[0] = loss. */
  prunedLoss: Float64Array;
  /** [nLayer * nHead + 1] each (empty with randomOrders 0): over the random orders, the mean, lowest and highest loss with k heads off. */
  randomLossMean: Float64Array;
  randomLossLow: Float64Array;
  randomLossHigh: Float64Array;
  /** The options it ran with. */
  randomOrders: number;
  seed: number;
  exactLimit: number;
  candidates: number;
}

/**
 * A logit of the last run split into what wrote it (logitAttribution()): each part's write into the
 * residual stream at `position`, through the final LayerNorm with its mean and scale at that
 * position fixed. The parts sum to the logit up to float rounding (`total` against `logit`).
 */
export interface LogitAttribution {
  position: number;
  /** The vocabulary id whose logit is split. */
  token: number;
  /** The model's logit (float32); at the last position that of run()'s logitsLast. */
  logit: number;
  /** The sum of every part below. */
  total: number;
  /** [nLayer * nHead]: each head's write z_h W_O^h (0 for a switched-off head). */
  heads: Float64Array;
  /** [nLayer]: each attention layer's W_O bias. */
  attnBias: Float64Array;
  /** [nLayer]: each block's MLP. */
  mlp: Float64Array;
  /** The token and position embeddings. */
  embedding: number;
  /** The final LayerNorm's bias. */
  lnBias: number;
  /** The final norm the parts are read through: 'LayerNorm' (GPT-2) or 'RMSNorm' (the Llama family, no bias: lnBias 0). */
  norm: string;
  nLayer: number;
  nHead: number;
  /** The text of the run split (as run() ran it: lone surrogates replaced by U+FFFD). */
  text: string;
  /** That run's switched-off heads, [[layer, head], ...]. */
  ablate: Array<[number, number]>;
}

export declare class HeadscopeModel {
  private constructor();
  /** Configuration and size. Throws after dispose(). */
  readonly info: ModelInfo;
  /** ModelInfo.threads: the threads in use. */
  readonly threads: number;
  /** True after dispose(). */
  readonly disposed: boolean;
  /**
   * Runs the model on `text`. Text that extends the previous run's text reuses its cache.
   * Throws an Error for non-string or empty text, or ablate entries out of range.
   */
  run(text: string, options: ThumbnailRunOptions): ThumbnailRunResult;
  run(text: string, options?: RunOptions): RunResult;
  /**
   * One head's insides on `text` (run with `options.ablate`'s heads off, none by default): q, k, v,
   * scores, attention, z, its write and each value's size. Like run(), it leaves the text in the
   * engine's cache. Throws an Error naming the range for a layer or head out of range, for ablate
   * entries out of range, and for non-string or empty text.
   */
  inspectHead(text: string, layer: number, head: number, options?: InspectOptions): HeadInside;
  /** The tokens of `text`, without running the model. */
  tokenize(text: string): Token[];
  /** The display text of vocabulary entry `id`. */
  tokenText(id: number): string;
  /**
   * The model writes: `text`, then up to `maxTokens` tokens, each drawn by the engine's sampling
   * rules with its seeded random source and each one incremental step on its cache (past the
   * context the start is cut as typing cuts it). Yields between tokens, so a page can paint and
   * `signal` can stop it. Rejects with an Error for bad options or empty text; whatever failed, the
   * model stays usable. Other calls may come between tokens: the generation then runs its sequence
   * again before drawing the next, and the continuation stays the same.
   */
  generate(text: string, options: GenerateOptions): Promise<GenerateResult>;
  /**
   * Runs the model on `text` without building a result, leaving the text in the engine's cache: a
   * later run() of a text that extends it only computes the new tokens.
   */
  prefill(
    text: string,
    options?: { ablate?: ReadonlyArray<readonly [number, number]>; allLogits?: boolean },
  ): { tokens: number; reusedTokens: number; droppedTokens: number };
  /** Allocates the engine's activations for `tokens` positions now (before a long text run in steps with prefill()); true when it reallocated, which empties the engine's cache. */
  reserve(tokens: number): boolean;
  /**
   * Which heads the model needs on `text`: the loss, each head's gate gradient and knock-out, and
   * the loss as heads are switched off one at a time, greedily by measured loss and in seeded
   * random orders (the engine's measurement, as the CLI's `headscope heads`). Runs in chunks and
   * yields between them, so a page can paint progress; other calls may come in between. Rejects
   * with an Error for a text under 2 tokens or bad options, and with an AbortError when `signal`
   * aborts; the engine's measurement is freed however it ends.
   */
  measureHeads(text: string, options?: HeadsOptions): Promise<HeadsReport>;
  /**
   * The last run()'s logit of vocabulary entry `token` at token `position`, split into each head's
   * write, W_O's biases, the MLPs, the embeddings and the final LayerNorm's bias. If the engine ran
   * something else since (inspectHead(), measureHeads()), that run is repeated first. With `of`,
   * the split is of that text's run (those heads off) instead: when the last run() was another
   * text or had other heads off, the engine runs it first (without making a result) and it becomes
   * the last run; a page whose other parts run texts of their own asks this way. Throws an Error
   * before any run (without `of`), and naming the range for a position or token out of range.
   */
  logitAttribution(
    position: number,
    token: number,
    of?: { text: string; ablate?: ReadonlyArray<readonly [number, number]> },
  ): LogitAttribution;
  /**
   * Activation and attribution patching between two texts: which heads (and which residual stream
   * positions) carry what makes `answer` beat `distractor` in the clean text rather than the
   * corrupted one (the engine's ActivationPatching, as the CLI's `headscope patch`). The attribution
   * map comes first (onProgress), then the exact scores in chunks, yielding between them. Rejects
   * with an Error for texts of different token counts, an empty text, a text past the context, an
   * answer that is not one token or equals the distractor; with an AbortError when `signal` aborts.
   */
  patch(options: PatchOptions): Promise<PatchReport>;
  /**
   * Why head (layer, head) gives token `query` its score on token `key` (<= query) when the model
   * runs `text`: the score split into the parts the residual stream is made of, on the query and the
   * key side, its contrast, and the value side. Runs the text (free when the engine holds it); it
   * becomes the last run. Throws an Error naming a layer, head, position or token out of range.
   */
  explainScore(
    text: string,
    layer: number,
    head: number,
    query: number,
    key: number,
    options?: ExplainOptions,
  ): ScoreSplit;
  /** Composition scores between every pair of heads and each head's copying score, from the weights alone. */
  circuits(options?: { seeds?: number }): Circuits;
  /**
   * A tile of head (layer, head)'s attention map when the model runs `text`, recomputed by the engine
   * from its cached queries and keys (about rows x T x headSize work), so a view draws what it looks
   * at without every full map. Runs the text (free when the engine holds it); it becomes the last run.
   * Throws an Error naming a layer, head, range or bin out of range.
   */
  attentionTile(text: string, layer: number, head: number, options?: AttentionTileOptions): AttentionTile;
  /** Every head's attention map on `text` in at most size x size max-pooled cells (the grid's thumbnails). */
  attentionThumbnails(text: string, options?: { size?: number; ablate?: Array<[number, number]> }): AttentionThumbnails;
  /** How the engine's memory is spent now: the weights, the activations, the budget a text must fit. */
  memory(): ModelMemory;
  /** Frees the model's wasm memory; every later call throws. Safe to call twice. */
  dispose(): void;
}

/**
 * Options of patch(). `clean` and `corrupted` must tokenize to the same number of tokens (within the
 * context); the Error otherwise names both counts and where the tokens first differ.
 */
export interface PatchOptions {
  clean: string;
  corrupted: string;
  /** The token whose logit the clean text should raise: its text, exactly one token (e.g. " Mary"), or its id. Default: the clean run's most likely next token. */
  answer?: string | number;
  /** The token it is measured against. Default: the corrupted run's most likely next token. */
  distractor?: string | number;
  /** Also patch each head at each position (nLayer x nHead x tokens more runs; default false). */
  byPosition?: boolean;
  /**
   * After the attribution map (one forward and one backward pass, before any exact run) and after
   * each chunk of patched runs, with the report so far. On the page thread a returned promise is
   * awaited before the next chunk. The finished report is the promise's value, not a progress.
   */
  onProgress?: (progress: PatchProgress) => void | Promise<void>;
  /** Aborting it stops the patching between chunks: the promise rejects with an Error named 'AbortError'. */
  signal?: AbortSignal;
  /** How long a chunk of patched runs lasts before the page may paint, in ms (default 12; one run may take longer). */
  chunkMs?: number;
}

export interface PatchProgress {
  /** Runs done as a fraction of those planned (0..1, never decreasing). */
  fraction: number;
  report: PatchReport;
}

/**
 * Which heads carry the answer (patch(); the CLI's `headscope patch --json`). LD = logit[answer] -
 * logit[distractor] at the last position. A score is (LD_patched - LD_corrupted) / (LD_clean -
 * LD_corrupted): 1 when the patch alone brings back the clean answer, 0 when it changes nothing.
 * Patching head (l, h) runs the corrupted text with that head's output before W_O (z) taken from the
 * clean run; every later layer is recomputed. Maps are row-major Float64Arrays; an exact score not
 * computed yet is NaN. Positions before firstDifference score exactly 0 (both runs are equal there).
 */
export interface PatchReport {
  nLayer: number;
  nHead: number;
  /** Tokens in each text. */
  tokens: number;
  /** The first position where the texts' tokens differ. */
  firstDifference: number;
  tokensClean: { id: number; text: string }[];
  tokensCorrupted: { id: number; text: string }[];
  answer: { id: number; text: string };
  distractor: { id: number; text: string };
  ldClean: number;
  ldCorrupted: number;
  /** [nLayer * nHead]: each head patched at every position. */
  heads: Float64Array;
  /** [nLayer * nHead]: the first-order estimate of `heads` from one backward pass of the corrupted run: sum of (z_clean - z_corrupted) . dLD/dz over the head's dimensions and positions, over LD_clean - LD_corrupted. Complete in the first progress. */
  headsAttribution: Float64Array;
  /** [nLayer * tokens]: the clean run's residual stream entering layer l at one position put into the corrupted run. */
  resid: Float64Array;
  /** [nLayer * nHead * tokens] with byPosition: each head patched at one position; else null. */
  headsByPosition: Float64Array | null;
  /** [nLayer * nHead * tokens] with byPosition: its attribution estimate; else null. */
  headsByPositionAttribution: Float64Array | null;
  /** Exact (patched) runs done and planned. */
  exactRunsDone: number;
  exactRunsTotal: number;
  /** Every exact score is in (exactRunsDone === exactRunsTotal). */
  complete: boolean;
}

/** Options of explainScore(). */
export interface ExplainOptions {
  /** Heads switched off for the run, as RunOptions.ablate. */
  ablate?: ReadonlyArray<readonly [number, number]>;
  /** The contrast's other key (<= query), or 'mean' (default): the mean over the keys 0..query. */
  versus?: number | 'mean';
  /** The value side's token id; default: the most likely next token at the query. */
  token?: number | null;
}

/**
 * Why a head attends (explainScore(); the CLI's `headscope explain --json`; definitions in
 * cpp/include/headscope/explain.hpp). The residual stream entering the head's layer is a sum of
 * parts (`components`: embed, pos, each earlier head's write L{l}H{h}, L{l}.attn_bias, L{l}.mlp,
 * bias); with the norms' scales frozen at the run's values each part has its own query and key.
 */
export interface ScoreSplit {
  text: string;
  ablate: Array<[number, number]>;
  layer: number;
  head: number;
  query: number;
  key: number;
  queryToken: { id: number; text: string };
  keyToken: { id: number; text: string };
  components: string[];
  /** The forward pass's own pre-softmax score q(query) . k(key) / sqrt(headSize). */
  score: number;
  /** [P * P], row a the query side's part, column b the key side's: q_a . k_b / sqrt(headSize); the cells sum to score. */
  table: Float64Array;
  /** What the contrast subtracts: the table at that key, or 'mean' over keys 0..query. */
  versus: number | 'mean';
  /** [P * P]: table minus the table at `versus` (or their mean): softmax ignores what every key shares. */
  contrast: Float64Array;
  /** The head's write at the query, sum_s a_s v_s W_O^h, as a push on `token`'s logit through the final norm frozen there. */
  value: { token: { id: number; text: string }; byToken: Float64Array; byPart: Float64Array; total: number };
}

/**
 * Which heads work together, from the weights alone (circuits(); `headscope circuits --json`).
 * Heads are counted layer * nHead + head; composition[x][a * nLayer * nHead + b] is head a's write read by
 * head b's query (q), key (k) or value (v), NaN unless layer(a) < layer(b).
 */
export interface Circuits {
  nLayer: number;
  nHead: number;
  /** [nLayer * nHead]: sum Re(lambda) / sum |lambda| of the head's full OV circuit's eigenvalues; above 0 it copies. */
  copying: Float64Array;
  composition: { q: Float64Array; k: Float64Array; v: Float64Array };
  /** The same scores for random Gaussian matrices of the same shapes, the mean over `seeds`. */
  baseline: { q: number; k: number; v: number };
  seeds: number;
}

/** Options of attentionTile(): rows and columns as [begin, end) of the text's tokens (default all), cells of bin x bin. */
export interface AttentionTileOptions {
  rows?: [number, number];
  columns?: [number, number];
  /** Tokens per cell side (default 1: the map's own weights, bit for bit). */
  bin?: number;
  ablate?: Array<[number, number]>;
}

/**
 * A part of one head's attention map. Each cell is the largest weight of its bin x bin block (the
 * last row and column of cells may cover fewer tokens): the maximum, not the mean, so a head that
 * puts a whole row on one token stays a cell of 1 at any bin.
 */
export interface AttentionTile {
  text: string;
  ablate: Array<[number, number]>;
  /** The text's tokens. */
  T: number;
  layer: number;
  head: number;
  rows: [number, number];
  columns: [number, number];
  bin: number;
  nRows: number;
  nCols: number;
  /** [nRows * nCols], row-major; row = query cell, column = key cell. */
  values: Float32Array;
}

/** Every head's map pooled as AttentionTile pools: bin the smallest power of two with ceil(T / bin) <= size, n = ceil(T / bin) cells a side. */
export interface AttentionThumbnails {
  text: string;
  ablate: Array<[number, number]>;
  T: number;
  size: number;
  bin: number;
  n: number;
  /** [nLayer * nHead * n * n]: head (layer, head)'s cells at (layer * nHead + head) * n * n. */
  values: Float32Array;
}

/** A model's shape for a fresh training run. */
export interface TrainerShape {
  nLayer: number;
  nHead: number;
  nEmbd: number;
  nPositions: number;
  vocabSize: number;
}

/**
 * A training run's options. Every value not given comes from the preset (default 'induction').
 * Tasks: 'induction' (spans of distinct random tokens repeated to fill the window, periods
 * minPeriod..maxPeriod without probePeriod), 'text' (windows of `text`, one token per byte for a
 * fresh model, or `init`'s tokenizer), 'batch' (only explicit step({ ids }) batches).
 */
export interface TrainerOptions {
  preset?: string;
  /** The shape of a fresh model (GPT-2 initialisation from `seed`). */
  config?: Partial<TrainerShape>;
  /** Start from these weights and tokenizer (what export() or a model folder holds): GPT-2's, or a
   *  Llama-family model's with its tokenizer.json. */
  init?: ModelFiles | TokenizerJsonModelFiles;
  /** Threads for forward and backward, as LoadOptions.threads. */
  threads?: number;
  task?: 'induction' | 'text' | 'batch';
  text?: string;
  batchSize?: number;
  /** T: tokens each sequence predicts. */
  seqLen?: number;
  /** Planned steps: the horizon of the cosine schedule. */
  steps?: number;
  optimizer?: 'adamw' | 'sgd';
  lr?: number;
  weightDecay?: number;
  /** > 0: clip the global gradient norm. */
  clip?: number;
  /** Steps of linear warmup. */
  warmup?: number;
  schedule?: 'constant' | 'cosine';
  seed?: number;
  minPeriod?: number;
  maxPeriod?: number;
  probePeriod?: number;
}

/** The run's options after its preset was applied (config always complete). */
export interface TrainerSpec extends Required<Omit<TrainerOptions, 'preset' | 'init' | 'text' | 'config'>> {
  config: TrainerShape;
}

export interface TrainingPreset {
  name: string;
  label: string;
  description: string;
  spec: TrainerSpec;
}

/** Every head's role scores on the probe, and the probe's first sequence with its attention. */
export interface TrainerProbe {
  /** [nLayer, nHead]: mean attention on the previous token. */
  previous: Float32Array;
  /** [nLayer, nHead]: prefix matching on the probe's repeat (attention to the token after the earlier copy). */
  induction: Float32Array;
  /** [nLayer, nHead, T, T] on the probe's first sequence. */
  attention: Float32Array;
  ids: Int32Array;
  /** The probe's period (T = 2 x period); the task never trains on it. */
  period: number;
  nLayer: number;
  nHead: number;
  T: number;
}

/** Rows of T+1 token ids for step({ ids }): arrays or integer typed arrays, all of one length. */
export type TokenIdRows = ReadonlyArray<readonly number[] | Int32Array | Uint32Array | Uint16Array | Uint8Array>;

/** A training run in the engine, from createTrainer() (an interface: the class itself is not exported). */
export interface HeadscopeTrainer {
  readonly spec: TrainerSpec;
  readonly stepsDone: number;
  /** The threads forward and backward run on. */
  readonly threads: number;
  /** Bytes the engine holds for the run. */
  readonly bytes: number;
  /** n optimizer steps (default 1), or one step on an explicit batch; the losses, one per step. Throws if training diverges (the weights stay those before the failed step). */
  step(n?: number | { ids: TokenIdRows }): Float32Array;
  learningRate(step: number): number;
  probe(): TrainerProbe;
  /** A model with the current weights (dispose it when done). */
  model(): HeadscopeModel;
  /** The files of a Hugging Face folder (weights in F32): GPT-2's four, or a Llama-family model's
   *  config, weights and tokenizer.json; loadModel() accepts them. */
  export():
    | { config: string; weights: Uint8Array; vocab: string; merges: string }
    | { config: string; weights: Uint8Array; tokenizer: string };
  dispose(): void;
}

/** Starts a training run in the engine. Throws an Error for bad options or a shape too large for memory. */
export declare function createTrainer(options?: TrainerOptions): Promise<HeadscopeTrainer>;
/** The training page's presets. */
export declare function trainingPresets(): Promise<TrainingPreset[]>;

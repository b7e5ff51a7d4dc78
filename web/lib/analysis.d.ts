// Types for analysis.js: what heads turned out to do (role scores) and head knock-out.
// The scores describe patterns found after training on the given text; no head is assigned a job.
import type { RunResult, RunOptions, Token } from './headscope.js';

/** Scores in [0, 1]; NaN when the text has no row that qualifies (e.g. no repeated token). Formulas in analysis.js. */
export interface HeadScores {
  /** Mean attention to the previous token. */
  previous: number;
  /** Mean attention to the first token (an attention sink). */
  first: number;
  /** Mean attention to the token itself. */
  self: number;
  /** Mean attention to earlier copies of the same token. */
  duplicate: number;
  /** Mean attention to the token that followed the current token's previous occurrence. */
  induction: number;
  /** Mean normalized entropy: 1 = uniform over the past, 0 = one token. */
  broad: number;
}
export type Role = keyof HeadScores;

/** Score at which a head earns each badge. */
export declare const ROLE_THRESHOLDS: Readonly<Record<Role, number>>;
/** A plain-words description of each role. */
export declare const ROLE_DESCRIPTIONS: Readonly<Record<Role, string>>;

/** Scores of one head from its T*T attention and the T token ids (arrays or typed arrays). */
export declare function headScores(att: ArrayLike<number>, ids: ArrayLike<number>, T?: number): HeadScores;
/** Scores of every head of a run: [layer][head]. */
export declare function allHeadScores(result: RunResult): HeadScores[][];
/**
 * allHeadScores() for a sequence of results, keeping each row's share of every score: a result
 * that begins with the previous one's tokens (typing at the end) computes only its new rows.
 */
export declare class HeadScoreRows {
  scores(result: RunResult): HeadScores[][];
}
/** The roles of `thresholds` (default ROLE_THRESHOLDS; any subset) whose score reaches its threshold, strongest first. */
export declare function headBadges(scores: HeadScores, thresholds?: Readonly<Partial<Record<Role, number>>>): Role[];

/** Anything with the model API, synchronous (HeadscopeModel) or in a worker (WorkerModel). */
export interface AnyModel {
  readonly info: { config: { vocabSize: number; nLayer: number; nHead: number } };
  run(text: string, options?: RunOptions): RunResult | Promise<RunResult>;
  tokenize(text: string): Token[] | Promise<Token[]>;
  tokenText(id: number): string | Promise<string>;
}

/** Two copies of a seeded random sequence of whole-word tokens: the probe for induction heads. */
export declare function inductionProbeText(model: AnyModel, options?: { length?: number; seed?: number }): Promise<string>;

export interface KnockoutEntry {
  layer: number;
  head: number;
  /** Mean next-token loss on the text with this head switched off. */
  loss: number;
  /** loss - baseLoss: how much the text needed this head. */
  delta: number;
}
/** Switches off each head in turn (on top of `ablate`) and ranks heads by the loss increase. */
export declare function knockoutRanking(model: AnyModel, text: string, options?: { ablate?: ReadonlyArray<readonly [number, number]> }): Promise<{ baseLoss: number; heads: KnockoutEntry[] }>;

/** A role of roles.json: what a score measures, and the threshold at which a head earns it. */
export interface RoleInfo {
  name: string;
  short: string;
  label: string;
  formula: string;
  threshold: number;
  /** Set for scores that are not shares in [0, 1]: '× uniform' for verb to subject. */
  unit?: string;
  description: string;
  /** 'live': badged on the reader's text; 'probe': measured through the engine on the cards' probe
   *  texts; 'card': measured for the model cards. */
  where: Array<'live' | 'probe' | 'card'>;
}
/** Every role of roles.json, the vocabulary the model cards use too. */
export declare const ROLES_TABLE: readonly RoleInfo[];

/** The induction probe of roles.json: the common words the lists are drawn from, list length, list count. */
export declare const INDUCTION_PROBE: Readonly<{ words: readonly string[]; listLength: number; lists: number }>;
/** Seeded lists of distinct common words that are single tokens, each as its ids and its text followed by itself. */
export declare function inductionWordLists(model: AnyModel, options?: { lists?: number; length?: number; seed?: number }): Promise<Array<{ ids: number[]; text: string }>>;
/** Prefix-matching scores [layer][head] of a run on a list of n tokens followed by itself. */
export declare function prefixMatchingScores(result: { T: number; nLayer: number; nHead: number; attention(layer: number, head: number): Float32Array }, n?: number): number[][];
/** The card's induction measure through the engine, averaged over seeded lists; copy accuracy with `copy`. */
export declare function inductionScores(model: AnyModel, options?: { lists?: number; length?: number; seed?: number; copy?: boolean; perList?: boolean }): Promise<{ scores: number[][]; copyAccuracy: number; lists: Array<{ ids: number[]; text: string }>; perList?: number[][][]; listSd?: number[][] }>;
/** Subject and main verb of a sentence built like "The chef, who trained in Paris, cooked the meal quickly."; null otherwise. */
export declare function verbSubjectParts(sentence: string): { subject: string; verb: string } | null;
/** Query (the verb's last token) and keys (the subject's tokens) of such a sentence's tokens; null otherwise. */
export declare function verbSubjectPositions(tokens: Array<{ start: number; end: number }>, text: string): { query: number; keys: number[]; subject: string; verb: string } | null;
/** Per head: attention from the verb to the subject, raw and as a multiple of uniform; null for other sentences. */
export declare function verbSubjectRatios(result: { text: string; tokens: Array<{ start: number; end: number }>; T: number; nLayer: number; nHead: number; attention(layer: number, head: number): Float32Array }): { ratio: number[][]; weight: number[][]; query: number; keys: number[] } | null;
/** The card's verb-to-subject measure through the engine, averaged over probe sentences (none: scores null). */
export declare function verbSubjectScores(model: AnyModel, sentences?: readonly string[] | null): Promise<{ scores: number[][] | null; weights: number[][] | null; sentences: number }>;

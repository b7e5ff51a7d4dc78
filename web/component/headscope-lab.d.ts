// Types for the <headscope-lab> web component (dist/headscope-lab.js, the package's
// `headscope/lab-component` export). Importing the module defines the element (a side effect):
//
//   import 'headscope/lab-component';
//   const lab = document.querySelector('headscope-lab');     // HeadscopeLabElement | null
//   lab?.lab?.setAblate([[0, 1]]);
//
// It sits next to headscope-view.js (and shares its model cache), analysis.js and the package's files.
import type { RunResult } from '../lib/headscope.js';
import type { TypedElement } from './headscope-view.js';

/** The element's attributes (strings in the DOM). Only text and ablate are watched after connection. */
export interface HeadscopeLabAttributes {
  /** The text the model reads (default: the article's sentence about the chef). */
  text?: string;
  /** A shipped model's name or a model folder URL. */
  model?: string;
  /** "layer:head,...": heads switched off at start (and whenever the attribute changes). */
  ablate?: string;
  /** Present: a text box to edit the text. */
  editable?: '';
  /** 'light' | 'dark' (default: the reader's preference). */
  theme?: 'light' | 'dark';
  /** Present: one column (the grid above the panels). */
  compact?: '';
  /** 'lazy': the model is fetched only when the widget comes near the viewport (as for an <img>); read when connected. */
  loading?: 'lazy' | 'eager';
}

/** The lab's panels: switch heads off, knock-out ranking, head roles, predict-then-reveal. */
export interface HeadscopeLabPanels {
  /** The switched-off heads, [[layer, head], ...]. */
  readonly ablate: Array<[number, number]>;
  /** Switch-off mode: a click on a grid cell switches that head off or on. */
  setSwitchMode(on: boolean): void;
  /** Switches one head off, or back on. */
  toggle(layer: number, head: number): void;
  /** Switches exactly these heads off. */
  setAblate(pairs: ReadonlyArray<readonly [number, number]>): void;
  /** "Knock out each head in turn": ranks the heads by how much the loss rises without each. */
  runKnockout(): Promise<unknown>;
  /** Predict, then reveal: a question on the selected head, or (true) on a surprising one. */
  startQuiz(surprising?: boolean): void;
  /** Answers the open question with key token `k`. */
  answerQuiz(k: number): void;
  endQuiz(): void;
}

export interface HeadscopeLabRenderDetail {
  /** Tokens of the result shown. */
  T: number;
  /** The switched-off heads of that result. */
  ablate: Array<[number, number]>;
}

export interface HeadscopeLabEventMap extends HTMLElementEventMap {
  /** After each render (bubbles, composed). */
  'headscope-render': CustomEvent<HeadscopeLabRenderDetail>;
}

// The element's base: HTMLElement typed by its attributes and events (as headscope-view.d.ts's).
declare const TypedHTMLElement: { new <Attributes, EventMap>(): TypedElement<Attributes, EventMap>; prototype: HTMLElement };

/** <headscope-lab>: every head in a grid with role badges, switch heads off, knock-outs, quizzes. */
export declare class HeadscopeLabElement extends TypedHTMLElement<HeadscopeLabAttributes, HeadscopeLabEventMap> {
  static readonly observedAttributes: string[];
  /** The latest run result (null before the first). */
  readonly result: RunResult | null;
  /** The lab's panels, once connected (null before). */
  readonly lab: HeadscopeLabPanels | null;
  /** Resolves with the element after its first render. */
  readonly ready: Promise<HeadscopeLabElement>;
}

declare global {
  interface HTMLElementTagNameMap {
    'headscope-lab': HeadscopeLabElement;
  }
}

export {};

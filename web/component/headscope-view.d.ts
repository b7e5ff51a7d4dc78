// Types for the <headscope-view> web component (dist/headscope-view.js, the package's
// `headscope/component` export). Importing the module defines the element (a side effect):
//
//   import 'headscope/component';
//   const view = document.createElement('headscope-view');   // HeadscopeViewElement
//   view.setAttribute('view', 'inside');
//   view.addEventListener('headscope-render', (e) => console.log(e.detail.T));
//
// The module imports the package's files at run time, so it sits beside them, as in dist/ (or on a
// CDN that serves npm files with Access-Control-Allow-Origin). Widgets naming the same model share
// one download and one Web Worker; where no worker can start (a Content-Security-Policy without it
// in worker-src) the model runs on the page thread, said once with console.info. Token text reaches
// the DOM only as text, and styles are constructed stylesheets, so no `style-src` is needed.
//
// The module also exports the views, runner and state helpers the demo page is built from; those
// are not a public API and are not declared here.
import type { RunResult } from '../lib/headscope.js';

/** What the element shows (attribute `view`). */
export type HeadscopeViewName = 'grid' | 'heatmap' | 'lines' | 'inside' | 'combine';

/** The element's attributes, as the element reads them (every attribute is a string in the DOM). */
export interface HeadscopeViewAttributes {
  /** The text the model reads (default: the article's sentence about the chef). */
  text?: string;
  /** Counted from 0. */
  layer?: `${number}`;
  head?: `${number}`;
  /** 'grid' | 'heatmap' (default) | 'lines' | 'inside' ("Inside this head": one head's computation step by step) | 'combine' (how the layer's heads combine through W_O: each head's share of the write at `token`, and its push on the next token). */
  view?: HeadscopeViewName;
  /** A shipped model's name or a model folder URL (default: the package's default model). */
  model?: string;
  /** "0,3": several heads of the layer at once in the lines view. */
  heads?: string;
  /** The focused token's index (default: the last token). */
  token?: `${number}`;
  /** For view="inside": the query token it walks through (else `token`). */
  inside?: `${number}`;
  /** For view="inside": the step shown, 1-6 (query, keys, scores, weights, values, write). */
  step?: `${number}`;
  /** 'weight' (default) or 'value': the grid, heatmap and lines coloured by weight × value size (α_ij ‖v_j W_O^h‖, per row). */
  by?: 'weight' | 'value';
  /** Links per token in the lines view (default 3; 0: every pair). */
  links?: `${number}`;
  /** "layer:head,...": heads switched off (a static view of the model without them). */
  ablate?: string;
  /** Present: a text box to edit the text, and Continue (with Stop and the writing's settings) to let the model write on. */
  editable?: '';
  /** 'light' | 'dark' (default: the reader's preference). */
  theme?: 'light' | 'dark';
  /** 'lazy': the model is fetched only when the widget comes near the viewport (as for an <img>); read when connected. */
  loading?: 'lazy' | 'eager';
}

/** The widget's state, in the form its URL uses (`state`). */
export interface HeadscopeViewState {
  model: string | undefined;
  text: string;
  layer: number;
  head: number;
  heads: number[];
  /** The focused token; null: the last one. */
  token: number | null;
  links: number | undefined;
  view: HeadscopeViewName;
  ablate: Array<[number, number]>;
  by: 'weight' | 'value';
  step: number;
}

/** One item of a scene (the display list every view draws from, and exports). */
export type SceneItem =
  | { type: 'rect'; x: number; y: number; w: number; h: number; fill: string; opacity?: number; stroke?: string; strokeWidth?: number; rx?: number }
  | { type: 'line'; x1: number; y1: number; x2: number; y2: number; stroke: string; width?: number; opacity?: number }
  | { type: 'text'; x: number; y: number; text: string; size?: number; fill: string; anchor?: 'start' | 'middle' | 'end'; weight?: string; rotate?: number };

/** A view as a display list: what exportSvg() and exportPng() draw. */
export interface Scene {
  width: number;
  height: number;
  background: string | null;
  font?: string;
  items: SceneItem[];
}

export interface HeadscopeRenderDetail {
  /** Tokens of the result shown. */
  T: number;
  view: HeadscopeViewName;
}

export interface HeadscopeSelectDetail {
  layer: number;
  head: number;
}

export interface HeadscopeViewEventMap extends HTMLElementEventMap {
  /** After each render (bubbles, composed). */
  'headscope-render': CustomEvent<HeadscopeRenderDetail>;
  /** A head was picked in the grid (bubbles, composed). */
  'headscope-select': CustomEvent<HeadscopeSelectDetail>;
}

/** <headscope-view>: one view of a model's attention, live. Changing an attribute updates it. */
export declare class HeadscopeViewElement extends TypedHTMLElement<HeadscopeViewAttributes, HeadscopeViewEventMap> {
  static readonly observedAttributes: string[];
  /** The latest run result (null before the first). */
  readonly result: RunResult | null;
  /** The widget's state as its URL would hold it. */
  readonly state: HeadscopeViewState;
  /** Resolves with the element after its first render. */
  readonly ready: Promise<HeadscopeViewElement>;
  /** The current view as a display list. Throws before the first render. */
  scene(): Scene;
  /** The current view as a standalone SVG document. */
  exportSvg(): string;
  /** The current view as a PNG, at `scale` times its size (default 2). */
  exportPng(scale?: number): Promise<Blob>;
}

/**
 * An element whose attribute and event methods are typed by its attributes and events (both
 * elements are): getAttribute/setAttribute know the attribute names, addEventListener the details.
 */
export interface TypedElement<Attributes, EventMap> extends HTMLElement {
  getAttribute<K extends keyof Attributes>(name: K): string | null;
  getAttribute(name: string): string | null;
  setAttribute<K extends keyof Attributes>(name: K, value: NonNullable<Attributes[K]>): void;
  setAttribute(name: string, value: string): void;
  addEventListener<K extends keyof EventMap>(type: K, listener: (this: this, ev: EventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof EventMap>(type: K, listener: (this: this, ev: EventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}
// The element's base: HTMLElement typed by its attributes and events. Not exported: at run time the
// base is HTMLElement itself (`export {}` below keeps the module's names to those exported).
declare const TypedHTMLElement: { new <Attributes, EventMap>(): TypedElement<Attributes, EventMap>; prototype: HTMLElement };

declare global {
  interface HTMLElementTagNameMap {
    'headscope-view': HeadscopeViewElement;
  }
}

export {};

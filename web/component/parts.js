// The building blocks of <headscope-view> that the demo pages use (views, runner, state helpers,
// scenes, the theme's helpers), exported again by headscope-view.js: a page imports them from the
// element's module, so that it shares that module's one model cache and one instance of each.
export { default as viewsCss } from './views.css';
export {
  getModel,
  getFastTypingModel,
  loadModelFromBuffers,
  modelLoadCount,
  setThreads,
} from './runtime/model-cache.js';
export { smallerStorageFor } from './runtime/smaller-storage.js';
export { Runner } from './runtime/runner.js';
export { DEFAULT_TEXT, VIEWS, parseHeads, stateToQuery, stateFromQuery } from './runtime/url-state.js';
export { embedSnippet } from './runtime/embed-snippet.js';
export { describeHead, focusToken, windowAround } from './model/describe.js';
export { GridView, gridScene } from './views/grid.js';
export { HeatmapView, heatmapScene } from './views/heatmap.js';
export { LinesView, linesScene } from './views/lines.js';
export { CombineView, combineScene, attributionTarget } from './views/combine.js';
export { TopKView } from './views/topk.js';
export { Writer } from './writer.js';
export { InsideView } from './views/inside.js';
export { insideScene } from './views/inside-scene.js';
export { insideSentence, clampStep, INSIDE_STEPS } from './model/inside.js';
export { VALUE_WEIGHTING_SENTENCE, valueWeightingSentence, hasValueNorms, shownWeights } from './model/weighting.js';
export { InsideSource } from './runtime/inside-source.js';
export { kvGroups, kvHeadOf, headSharing, sharingSentence, cacheBytes } from './model/kv-groups.js';
export { Tooltip } from './views/tooltip.js';
export { setFill } from './views/dom.js';
export { readTheme, tokenLabel, tokenWords, heat, heatInk, quoteToken } from './runtime/theme.js';
export { sceneToSvgString, sceneToPngBlob, downloadBlob, sceneToSvg } from './views/scene.js';

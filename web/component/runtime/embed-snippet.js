// The "copy embed code" snippet: an <iframe> of embed.html showing a view's state.
import { stateToQuery } from './url-state.js';

// the state's text is the reader's: escaped, it stays inside the attribute's quotes
function escapeAttr(s) {
  return String(s).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The <iframe> snippet that shows `state` from the page at `embedUrl` (absolute URL of embed.html).
 *  No style attribute, so it can be pasted into pages with a strict style-src policy. */
export function embedSnippet(embedUrl, state, { width = 720, height = 560 } = {}) {
  const src = `${embedUrl}?${stateToQuery(state)}`;
  return `<iframe src="${escapeAttr(src)}" width="${width}" height="${height}" title="headscope: attention heads of a small GPT-2" loading="lazy" frameborder="0"></iframe>`;
}

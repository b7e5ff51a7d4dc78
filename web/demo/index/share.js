// Exports (PNG and SVG of the grid, the detail view, "Inside this head" and the combine view) and
// the "copy embed code" button, which writes the <iframe> snippet for the current view.
import { embedSnippet, sceneToSvgString, sceneToPngBlob, downloadBlob } from '../../component/headscope-view.js';

const $ = (id) => document.getElementById(id);

/**
 * sceneFor('grid' | 'combine' | 'detail' | 'inside') -> the scene to export (null: nothing yet);
 * hasResult(); state: the page's state (for file names); urlState(): the state the iframe should show.
 */
export function installSharing({ sceneFor, hasResult, state, urlState }) {
  for (const b of document.querySelectorAll('[data-export]')) {
    b.addEventListener('click', async () => {
      if (!hasResult()) return;
      const which = b.dataset.export;
      const name =
        which === 'grid' || which === 'circuits'
          ? which
          : which === 'combine'
            ? `combine-L${state.layer}`
            : which === 'patch'
              ? 'patching'
              : which === 'why'
                ? `why-L${state.layer}H${state.head}`
                : which === 'inside'
                  ? `inside-L${state.layer}H${state.head}-step${state.step}`
                  : `${state.view}-L${state.layer}H${state.head}`;
      const scene = sceneFor(which);
      if (!scene) return; // the head's insides are not read yet
      if (b.dataset.format === 'svg') {
        downloadBlob(
          new Blob([sceneToSvgString(scene, `headscope ${name}`)], { type: 'image/svg+xml' }),
          `headscope-${name}.svg`,
        );
      } else {
        downloadBlob(await sceneToPngBlob(scene, 2), `headscope-${name}.png`);
      }
    });
  }

  $('embed-button').addEventListener('click', async () => {
    if (!hasResult()) return;
    const embedUrl = new URL('embed.html', location.href).href;
    // size the iframe to the view it shows (caption, widget padding and the credit line around it)
    const scene = sceneFor('detail');
    const width = Math.round(Math.min(960, Math.max(360, scene.width + 24)));
    const height = Math.round(scene.height + 100);
    const snippet = embedSnippet(embedUrl, urlState(), { width, height });
    $('embed-box').hidden = false;
    const code = $('embed-code');
    code.value = snippet;
    code.select();
    const status = $('embed-status');
    try {
      await navigator.clipboard.writeText(snippet);
      status.textContent = 'Copied to the clipboard.';
    } catch {
      status.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
    }
  });
}

// The base of the SVG views: shows a scene (scene.js display list) as live SVG and keeps it for
// export.
import { LiveSvg } from './scene.js';

/** Shows a scene as SVG inside `host`; keeps the last scene for export. */
export class SceneView {
  constructor(host, { title } = {}) {
    this.host = host;
    this.doc = host.ownerDocument;
    this.title = title;
    this.scene = null;
    this.svg = null;
  }

  show(scene, label, role = 'img') {
    // one <svg> per view, updated in place (scene.js LiveSvg): typing changes a few attributes and
    // texts instead of rebuilding every node
    if (!this.live) {
      this.live = new LiveSvg(this.doc);
      this.live.svg.setAttribute('class', 'hs-svg');
      this.host.appendChild(this.live.svg);
    }
    const svg = this.live.update(scene, label);
    if (svg.getAttribute('role') !== role) svg.setAttribute('role', role); // 'group' when the picture holds focusable parts
    if (label) {
      if (svg.getAttribute('aria-label') !== label) svg.setAttribute('aria-label', label);
    } else svg.removeAttribute('aria-label');
    // shrink to the container, but not below ~70% of the natural size (then scroll sideways)
    const minWidth = `${Math.round(Math.min(scene.width, Math.max(300, scene.width * 0.7)))}px`;
    if (this.minWidth !== minWidth) {
      svg.style.minWidth = minWidth;
      this.minWidth = minWidth;
    }
    this.svg = svg;
    this.scene = scene;
    return svg;
  }

  /** Pointer position in scene coordinates. */
  toScene(event) {
    const r = this.svg.getBoundingClientRect();
    if (!r.width || !r.height) return null;
    return {
      x: ((event.clientX - r.left) * this.scene.width) / r.width,
      y: ((event.clientY - r.top) * this.scene.height) / r.height,
    };
  }
}

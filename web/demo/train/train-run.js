// One training run on the training page: its controls, its Web Worker (createTrainerInWorker), and
// its views (loss curve, role scores over steps, every head on the probe, role badges). Two of these
// sit side by side; each trains on its share of the cores (threadShare()).
//
// Life of a run: the controls pick a preset and a shape; Start creates the worker's trainer (once)
// and trains in chunks; Pause aborts the chunked train() (it resolves after the step in progress);
// Start again continues; Reset disposes the worker and unlocks the controls. A failure (a shape too
// large, a text too short, a diverging learning rate) is shown in the panel and stops the run; what
// was trained so far stays on screen.
import { createTrainerInWorker } from '../../lib/worker/client.js';
import { makeResult } from '../../lib/result.js';
import { ROLE_THRESHOLDS } from '../../lib/analysis.js';
import { gridScene } from '../../component/views/grid.js';
import { SceneView } from '../../component/views/scene-view.js';
import { el } from '../../component/views/dom.js';
import { lossChartScene, scoreChartScene } from '../../component/charts/training-charts.js';
import { readTheme } from '../../component/runtime/theme.js';

const LAYERS = [1, 2, 3, 4];

// Each of the page's two runs gets half the cores (up to 8 in all) where threads can run, so the
// two do not fight over them; undefined elsewhere (the engine's default, one thread, said once why).
function threadShare() {
  if (!globalThis.crossOriginIsolated) return undefined;
  return Math.max(1, Math.floor(Math.min(navigator.hardwareConcurrency || 1, 8) / 2));
}
const HEADS = [1, 2, 4, 8];
const WIDTHS = [32, 64, 128];
const PROBE_EVERY = 25;
// charts redraw at most this often while training (each redraw updates a few thousand SVG nodes;
// at every progress message the page thread would spend most of its time drawing)
const DRAW_INTERVAL_MS = 250;
const DEFAULT_TEXT =
  'The chef, who trained in Paris, cooked the meal quickly. The mayor, who was born in Lyon, opened the bridge early. ';

function select(doc, id, label, values, format = String) {
  const wrap = el(doc, 'label', 'train-field');
  wrap.htmlFor = id;
  wrap.append(el(doc, 'span', '', label));
  const s = el(doc, 'select');
  s.id = id;
  for (const v of values) s.append(new Option(format(v), String(v)));
  wrap.append(s);
  return { wrap, select: s };
}

function button(doc, text, cls = '') {
  const b = el(doc, 'button', `btn ${cls}`, text);
  b.type = 'button';
  return b;
}

// the probe as a result the grid's scene builder reads (tokens named by id)
export function probeResult(probe) {
  const tokens = Array.from(probe.ids, (id, i) => ({ id, text: `t${id}`, start: i, end: i + 1 }));
  return makeResult({
    text: '',
    tokens,
    T: probe.T,
    nLayer: probe.nLayer,
    nHead: probe.nHead,
    droppedTokens: 0,
    reusedTokens: 0,
    attentionAll: probe.attention,
    contributionNorms: new Float32Array(probe.nLayer * probe.nHead * probe.T),
    logitsLast: new Float32Array(0),
    topNext: [],
  });
}

export class TrainingRunPanel {
  /**
   * host: the element to build into; presets: trainingPresets(); name: 'A' or 'B'; preset: the
   * starting preset's name; onOpenInDemo(files, text): hands the trained model to the demo.
   */
  constructor(host, { presets, name, preset, onOpenInDemo, announce }) {
    this.doc = host.ownerDocument;
    this.presets = presets;
    this.name = name;
    this.onOpenInDemo = onOpenInDemo;
    this.announce = announce;
    this.trainer = null;
    this.abort = null;
    this.running = false;
    this.history = { losses: [], scores: [], probe: null };
    this.inductionAtMs = null;
    this.drawTimer = 0;
    this.lastDraw = 0;
    this.probeDirty = true;
    this.build(host);
    this.applyPreset(preset);
  }

  build(host) {
    const d = this.doc;
    const id = (s) => `run-${this.name}-${s}`;
    const root = el(d, 'section', 'panel train-run');
    root.setAttribute('aria-labelledby', id('title'));
    root.dataset.run = this.name;
    const title = el(d, 'h2', '', `Run ${this.name}`);
    title.id = id('title');
    const controls = el(d, 'div', 'train-controls');
    const preset = select(
      d,
      id('preset'),
      'Preset',
      this.presets.map((p) => p.name),
      (n) => this.presets.find((p) => p.name === n).label,
    );
    const layers = select(d, id('layers'), 'Layers', LAYERS);
    const heads = select(d, id('heads'), 'Heads per layer', HEADS);
    const width = select(d, id('width'), 'Width', WIDTHS);
    controls.append(preset.wrap, layers.wrap, heads.wrap, width.wrap);
    const textLabel = el(d, 'label', 'train-text', 'Text to learn (one token per byte)');
    const text = el(d, 'textarea');
    text.id = id('text');
    text.rows = 3;
    text.value = DEFAULT_TEXT.repeat(12);
    textLabel.htmlFor = text.id;
    const textWrap = el(d, 'div', 'train-textwrap');
    textWrap.append(textLabel, text);
    const description = el(d, 'p', 'explain train-description');
    const buttons = el(d, 'div', 'train-buttons');
    const start = button(d, 'Start', 'train-start');
    const reset = button(d, 'Reset', 'train-reset');
    const open = button(d, 'Open this model in the demo', 'train-open');
    open.disabled = true;
    buttons.append(start, reset, open);
    const status = el(d, 'p', 'stats train-status', 'Not started.');
    status.setAttribute('role', 'status');
    const error = el(d, 'p', 'notice train-error');
    error.setAttribute('role', 'alert');
    error.hidden = true;
    const charts = el(d, 'div', 'train-charts');
    const lossHost = el(d, 'div', 'train-chart train-loss');
    const inductionHost = el(d, 'div', 'train-chart train-induction');
    const previousHost = el(d, 'div', 'train-chart train-previous');
    charts.append(lossHost, inductionHost, previousHost);
    const gridTitle = el(
      d,
      'h3',
      '',
      'Every head on the probe (rows: the token that looks; columns: the tokens it sees)',
    );
    const gridHost = el(d, 'div', 'train-grid');
    const badges = el(d, 'ul', 'train-badges');
    badges.setAttribute('aria-label', `Run ${this.name}: heads with a role`);
    root.append(title, controls, textWrap, description, buttons, status, error, charts, gridTitle, gridHost, badges);
    host.append(root);

    this.root = root;
    this.controls = { preset: preset.select, layers: layers.select, heads: heads.select, width: width.select, text };
    this.textWrap = textWrap;
    this.description = description;
    this.buttons = { start, reset, open };
    this.status = status;
    this.error = error;
    this.views = {
      loss: new SceneView(lossHost),
      induction: new SceneView(inductionHost),
      previous: new SceneView(previousHost),
      grid: new SceneView(gridHost),
    };
    this.badges = badges;

    preset.select.addEventListener('change', () => this.applyPreset(preset.select.value));
    start.addEventListener('click', () => (this.running ? this.pause() : this.start()));
    reset.addEventListener('click', () => this.reset());
    open.addEventListener('click', () => this.openInDemo());
  }

  applyPreset(name) {
    const p = this.presets.find((x) => x.name === name) ?? this.presets[0];
    this.preset = p;
    const c = this.controls;
    c.preset.value = p.name;
    c.layers.value = String(p.spec.config.nLayer);
    c.heads.value = String(p.spec.config.nHead);
    c.width.value = String(p.spec.config.nEmbd);
    this.textWrap.hidden = p.spec.task !== 'text';
    this.description.textContent = p.description;
    this.probeDirty = true;
    this.draw();
  }

  options() {
    const c = this.controls;
    const config = {
      ...this.preset.spec.config,
      nLayer: +c.layers.value,
      nHead: +c.heads.value,
      nEmbd: +c.width.value,
    };
    const options = { preset: this.preset.name, config, threads: threadShare() };
    if (this.preset.spec.task === 'text') options.text = c.text.value;
    return options;
  }

  setLocked(locked) {
    for (const k of ['preset', 'layers', 'heads', 'width', 'text']) this.controls[k].disabled = locked;
  }

  showError(message) {
    this.error.hidden = !message;
    this.error.textContent = message ? `Training stopped: ${message}` : '';
  }

  async start() {
    if (this.running) return;
    this.showError('');
    this.running = true;
    this.buttons.start.textContent = 'Pause';
    this.setLocked(true);
    this.root.dataset.state = 'running';
    try {
      if (!this.trainer) {
        this.status.textContent = 'Starting a worker…';
        this.trainer = await createTrainerInWorker(this.options());
        this.spec = this.trainer.spec;
        this.startedAt = performance.now();
        this.trainedMs = 0;
      }
      const remaining = Math.max(1, this.spec.steps - this.trainer.stepsDone);
      this.abort = new AbortController();
      const t0 = performance.now();
      const done = await this.trainer.train({
        steps: remaining,
        probeEvery: PROBE_EVERY,
        signal: this.abort.signal,
        onProgress: (p) => this.progress(p, t0),
      });
      this.trainedMs += performance.now() - t0;
      this.root.dataset.state = done.stopped ? 'paused' : 'done';
      if (!done.stopped) this.announce(`Run ${this.name} finished ${done.stepsDone} steps.`);
    } catch (e) {
      this.root.dataset.state = 'failed';
      this.showError(e.message);
      if (!this.trainer || this.trainer.disposed) this.setLocked(false);
    } finally {
      this.running = false;
      this.abort = null;
      this.buttons.start.textContent =
        this.trainer && this.trainer.stepsDone < (this.spec?.steps ?? 0) ? 'Continue' : 'Start';
      this.buttons.start.disabled = this.root.dataset.state === 'done';
      this.buttons.open.disabled = !this.trainer || this.trainer.stepsDone === 0;
      this.draw();
    }
  }

  pause() {
    this.abort?.abort();
  }

  reset() {
    this.abort?.abort();
    this.trainer?.dispose();
    this.trainer = null;
    this.spec = null;
    this.running = false;
    this.history = { losses: [], scores: [], probe: null };
    this.inductionAtMs = null;
    delete this.root.dataset.inductionAtMs;
    delete this.root.dataset.inductionAtStep;
    this.root.dataset.state = 'idle';
    this.setLocked(false);
    this.showError('');
    this.buttons.start.textContent = 'Start';
    this.buttons.start.disabled = false;
    this.buttons.open.disabled = true;
    this.status.textContent = 'Not started.';
    this.probeDirty = true;
    this.draw();
  }

  progress(p, t0) {
    for (const x of p.losses) this.history.losses.push(x);
    if (p.probe) {
      this.history.probe = p.probe;
      this.probeDirty = true;
      this.history.scores.push({ step: p.stepsDone, previous: p.probe.previous, induction: p.probe.induction });
      const best = Math.max(...p.probe.induction);
      if (best >= ROLE_THRESHOLDS.induction && this.inductionAtMs === null) {
        this.inductionAtMs = this.trainedMs + performance.now() - t0;
        // read by the end-to-end test and the benchmark: time and step of the first induction head
        this.root.dataset.inductionAtMs = String(Math.round(this.inductionAtMs));
        this.root.dataset.inductionAtStep = String(p.stepsDone);
        this.announce(`Run ${this.name}: an induction head formed at step ${p.stepsDone}.`);
      }
    }
    const loss = p.losses[p.losses.length - 1];
    const threads = this.trainer.threads;
    this.status.textContent =
      `Step ${p.stepsDone} of ${this.spec.steps} · loss ${loss.toFixed(3)} · ` +
      `${Math.round(p.tokensPerSecond).toLocaleString('en-US')} tokens/s on ${threads} thread${threads === 1 ? '' : 's'} · learning rate ${p.lr.toPrecision(2)}`;
    this.root.dataset.steps = String(p.stepsDone);
    this.scheduleDraw();
  }

  scheduleDraw() {
    if (this.drawTimer) return;
    const wait = Math.max(0, this.lastDraw + DRAW_INTERVAL_MS - performance.now());
    this.drawTimer = setTimeout(
      () =>
        requestAnimationFrame(() => {
          this.drawTimer = 0;
          this.draw();
        }),
      wait,
    );
  }

  draw() {
    this.lastDraw = performance.now();
    const theme = readTheme(this.root);
    const steps = this.spec?.steps ?? this.preset.spec.steps;
    const nLayer = this.spec?.config.nLayer ?? +this.controls.layers.value;
    const nHead = this.spec?.config.nHead ?? +this.controls.heads.value;
    const { losses, scores, probe } = this.history;
    this.views.loss.show(
      lossChartScene(losses, theme, { steps, label: 'Loss (mean cross-entropy per token)' }),
      `Run ${this.name}: loss over steps`,
    );
    if (!this.probeDirty) return;
    this.probeDirty = false;
    for (const metric of ['induction', 'previous']) {
      const history = scores.map((s) => ({ step: s.step, scores: s[metric] }));
      const title = metric === 'induction' ? 'Induction score of every head' : 'Previous-token score of every head';
      this.views[metric].show(
        scoreChartScene(history, theme, { nLayer, nHead, steps, threshold: ROLE_THRESHOLDS[metric], title }),
        `Run ${this.name}: ${title.toLowerCase()} over steps`,
      );
    }
    if (probe) {
      const { scene } = gridScene(probeResult(probe), { layer: -1, head: -1 }, theme);
      this.views.grid.show(
        scene,
        `Run ${this.name}: attention of every head on the probe at step ${scores[scores.length - 1].step}`,
      );
    }
    this.drawBadges(probe);
  }

  drawBadges(probe) {
    const items = [];
    if (probe) {
      for (let l = 0; l < probe.nLayer; l++)
        for (let h = 0; h < probe.nHead; h++) {
          const i = l * probe.nHead + h;
          for (const [role, label] of [
            ['previous', 'previous token'],
            ['induction', 'induction'],
          ]) {
            const score = probe[role][i];
            if (score >= ROLE_THRESHOLDS[role]) {
              const li = el(this.doc, 'li', `hs-badge train-badge-${role}`, `L${l}H${h} ${label} ${score.toFixed(2)}`);
              li.dataset.role = role;
              items.push(li);
            }
          }
        }
    }
    if (!items.length)
      items.push(
        el(this.doc, 'li', 'train-badge-none', probe ? 'No head has a role yet.' : 'Start the run to see roles form.'),
      );
    this.badges.replaceChildren(...items);
  }

  async openInDemo() {
    if (!this.trainer) return;
    try {
      const files = await this.trainer.export();
      const probe = this.history.probe ?? (await this.trainer.probe());
      await this.onOpenInDemo(
        files,
        probe,
        `run ${this.name} (${this.spec.config.nLayer} × ${this.spec.config.nHead}, step ${this.trainer.stepsDone})`,
      );
    } catch (e) {
      this.showError(`could not open the model in the demo: ${e.message}`);
    }
  }

  dispose() {
    this.reset();
  }
}

// The training page (train.html): two runs side by side, each in its own Web Worker
// (train-run.js), by default the same task with 2 layers and with 1, so the reader sees that an
// induction head needs a head in an earlier layer to build on.
import { trainingPresets } from '../../lib/headscope.js';
import { TrainingRunPanel } from './train-run.js';
import { saveTrainedModel } from '../common/trained-model.js';

const live = document.getElementById('train-live');
const announce = (message) => {
  live.textContent = message;
};

// the probe's tokens as the synthetic vocabulary writes them (one printable character per id)
function probeText(probe) {
  return Array.from(probe.ids, (id) => String.fromCharCode(33 + id)).join('');
}

async function openInDemo(files, probe, name) {
  await saveTrainedModel({ files, name, text: probeText(probe) });
  location.href = 'index.html?trained=1';
}

const host = document.getElementById('train-runs');
try {
  const presets = await trainingPresets();
  const runs = [
    new TrainingRunPanel(host, { presets, name: 'A', preset: 'induction', onOpenInDemo: openInDemo, announce }),
    new TrainingRunPanel(host, { presets, name: 'B', preset: 'induction-1-layer', onOpenInDemo: openInDemo, announce }),
  ];
  // both views follow the page's theme
  window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', () =>
    runs.forEach((r) => {
      r.probeDirty = true;
      r.draw();
    }),
  );
  document.body.dataset.ready = 'true';
} catch (e) {
  const p = document.createElement('p');
  p.className = 'notice';
  p.setAttribute('role', 'alert');
  p.textContent = `The training page could not start: ${e.message}`;
  host.replaceChildren(p);
}

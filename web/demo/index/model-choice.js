// The demo page's model: the texts that name it, and the picker that changes it (the site's models,
// a folder opened from the reader's disk, the training page's model). demo.js's useModel() makes a
// model the page's.
import { stateToQuery, loadModelFromBuffers, smallerStorageFor } from '../../component/headscope-view.js';
import { modelIndex, modelSize, cacheLine } from '../common/models.js';
import { installLocalModelPicker, readModelFiles } from './local-model.js';

const $ = (id) => document.getElementById(id);
const setText = (node, text) => {
  if (node.textContent !== text) node.textContent = text;
}; // text, never markup

/** The tagline, the title and the model line, for `model` (named `name`, described by `card`). */
export function showModelTexts(model, { name, local, card }) {
  const info = model.info;
  const c = info.config;
  const size = modelSize(info);
  $('tagline').textContent =
    `Every attention head of ${name} (${c.nLayer} layers × ${c.nHead} heads, ${size}), live as you type. Everything runs in your browser.`;
  document.title = `headscope: ${name}, every attention head live as you type`;
  let cardText = '';
  if (card?.loss?.val !== undefined)
    cardText += ` Validation loss ${Number(card.loss.val).toFixed(3)} nats per token (perplexity ${card.loss.val_perplexity}).`;
  if (card?.description) cardText += ` ${card.description}`;
  const threads = `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  const where =
    model.thread === 'page'
      ? 'on the page thread (no Web Worker could start)'
      : model.fastTyping
        ? `in a Web Worker, ${threads}, with short updates while typing on the page thread`
        : `in a Web Worker, ${threads}`;
  $('model-info').textContent =
    `Model: ${name}${local ? ' (from your disk, not uploaded)' : ''}, ${c.nLayer} layers × ${c.nHead} heads, ${size}, context ${c.nPositions} tokens; ${cacheLine(info)}; engine: WebAssembly ${info.simd.simd ? `SIMD128${info.simd.relaxedMadd ? ' with relaxed-SIMD multiply-add' : ''}` : 'scalar'} ${where}.${cardText}`;
}

/**
 * The model picker. `page` is demo.js's page state, `useModel(model, { name, local })` demo.js's,
 * `urlState()` the page's state for its URL. Returns { list() (fills the picker), addLocal(label,
 * name) (a model without a URL, now shown) }.
 */
export function installModelChoice({ page, useModel, urlState }) {
  const picker = $('model-select');
  async function listModels() {
    const models = (await modelIndex()).map((m) => m.name);
    const current = page.state.model || 'headscope-base';
    if (!models.includes(current)) models.push(current);
    picker.replaceChildren(...models.map((m) => new Option(m.length > 40 ? `…${m.slice(-39)}` : m, m)));
    picker.value = current;
    $('model-pick').hidden = models.length < 2;
  }
  picker.addEventListener('change', () => {
    if (picker.value.startsWith('local:')) return; // the folder already open
    const next = { ...urlState(), model: picker.value === 'headscope-base' ? undefined : picker.value };
    location.search = stateToQuery(next);
  });

  // Opening a folder from disk: the previous model stays in use until the new one has loaded.
  const localStatus = $('local-status');
  async function openLocal(picked) {
    setText(localStatus, `Reading ${picked.name} (${(picked.bytes / 1e6).toFixed(0)} MB) from your disk…`);
    document.body.dataset.localLoading = 'true';
    try {
      setText(localStatus, `Loading ${picked.name} into the engine…`);
      let model;
      try {
        model = await loadModelFromBuffers(await readModelFiles(picked));
      } catch (e) {
        // too large as stored: again in the smaller storage the engine says would fit (the buffers
        // went to the failed worker, so the files are read again)
        const weights = smallerStorageFor(e);
        if (!weights) throw e;
        setText(
          localStatus,
          `Loading ${picked.name} with ${weights === 'q8' ? '8-bit' : 'F16'} weights: as stored, they do not fit this tab's memory…`,
        );
        model = await loadModelFromBuffers(await readModelFiles(picked), { weights });
      }
      useModel(model, { name: picked.name, local: true });
      for (const o of [...picker.options]) if (o.value.startsWith('local:')) o.remove();
      addLocal(`${picked.name} (from disk)`, picked.name);
      const smaller =
        model.info.weights === 'q8'
          ? " Its weights are held in 8 bits to fit this tab: its numbers differ slightly from the checkpoint's."
          : '';
      setText(
        localStatus,
        `Opened ${picked.name} from your disk (${modelSize(model.info)}). Nothing was uploaded.${smaller}`,
      );
    } catch (e) {
      const still = page.modelName ? ` Still showing ${page.modelName}.` : '';
      setText(localStatus, `Could not open ${picked.name}: ${e.message}.${still}`);
    } finally {
      delete document.body.dataset.localLoading;
    }
  }
  installLocalModelPicker({
    folderInput: $('folder-input'),
    filesInput: $('files-input'),
    dropTarget: document.body,
    onModel: (picked) => {
      openLocal(picked);
    },
    onError: (e) => {
      const still = page.modelName ? ` Still showing ${page.modelName}.` : '';
      setText(localStatus, `Could not open that model: ${e.message}${still}`);
    },
  });

  function addLocal(label, name) {
    const option = new Option(label, `local:${name}`);
    picker.add(option);
    picker.value = option.value;
    $('model-pick').hidden = false;
  }

  return { list: listModels, addLocal };
}

// The demo page's first model: ?threads=, ?trained=1 (the model the training page saved in this
// browser) or the URL's model with a progress bar, and the head the page opens on (the card's most
// telling head on the article's sentence, card-opening.js); a model that cannot load says why.
import { getFastTypingModel, loadModelFromBuffers, setThreads, setFill } from '../../component/headscope-view.js';
import { loadCard } from '../common/models.js';
import { loadTrainedModel } from '../common/trained-model.js';
import { cardOpening } from './card-opening.js';
import { URL_THREADS } from './page-url.js';

const $ = (id) => document.getElementById(id);

// ?trained=1: the model the training page saved in this browser, on the probe text it trained for
async function startTrained({ state, textBox, useModel, models }) {
  const saved = await loadTrainedModel();
  if (!saved)
    throw new Error(
      'no trained model is stored in this browser: train one on the training page (train.html) and open it from there',
    );
  state.text = saved.text;
  textBox.value = saved.text;
  const model = await loadModelFromBuffers(saved.files);
  const name = `trained ${saved.name}`;
  useModel(model, { name, local: true });
  models.addLocal(`${name} (from the training page)`, name);
}

/**
 * Loads the page's first model and hands it to `useModel(model, { name, card })`. `page`: the page
 * object (its state; tokenFromCard is set when the card chose the focused token); `fromUrl`: the
 * state the URL gave; `textBox`: the text box; `models`: the model picker (installModelChoice).
 */
export async function startPage({ page, fromUrl, textBox, useModel, models }) {
  const { state } = page;
  const fill = $('progress-fill');
  const bar = $('progress');
  try {
    // ?threads=N: the engine's threads (1: the single-threaded build), for a reader to compare
    if (URL_THREADS !== null) setThreads(/^\d+$/.test(URL_THREADS) ? Number(URL_THREADS) : URL_THREADS);
    if (new URLSearchParams(location.search).get('trained') === '1') {
      await startTrained({ state, textBox, useModel, models });
      return;
    }
    const model = await getFastTypingModel(state.model, {
      onProgress: ({ loaded, total }) => {
        if (!total) return;
        const pct = Math.min(100, (100 * loaded) / total);
        setFill(fill, pct / 100);
        bar.setAttribute('aria-valuenow', pct.toFixed(0));
        $('loading-text').textContent =
          `Loading the model… ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`;
      },
    });
    const name = model.info.name;
    const card = await loadCard(state.model || 'headscope-base');
    // the article's sentence opens on the card's most telling head, unless the URL chose one
    const opening = await cardOpening(model, card, { text: state.text, fromUrl });
    if (opening) {
      state.layer = opening.layer;
      state.head = opening.head;
      state.heads = [opening.head];
      if (opening.token !== undefined) {
        state.token = opening.token;
        page.tokenFromCard = true;
      }
    }
    useModel(model, { name, card });
  } catch (e) {
    $('loading').classList.add('error');
    const hint = state.model
      ? ''
      : ' The default model may not have been built yet; open this page with ?model=<folder URL> to use another model.';
    $('loading-text').textContent = `The model could not be loaded: ${e.message}.${hint}`;
    document.body.dataset.error = 'true';
  }
}

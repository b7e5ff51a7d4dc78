// Opening a model folder from the reader's disk (a Hugging Face folder: GPT-2's such as `gpt2` or
// `distilgpt2`, or the Llama family's such as Qwen3-0.6B): a file picker for the folder or its
// files, and drag and drop onto the page. Nothing is uploaded: the files are read in the browser and
// handed to loadModel() as buffers.

import { tokenizerKind } from '../../lib/files.js';

/** The four files of a GPT-2 folder, by the keys loadModel() takes. */
export const MODEL_FILES = Object.freeze({
  config: 'config.json',
  weights: 'model.safetensors',
  vocab: 'vocab.json',
  merges: 'merges.txt',
});
/** The three files of a Llama-family folder (its tokenizer in tokenizer.json). */
export const TOKENIZER_JSON_MODEL_FILES = Object.freeze({
  config: 'config.json',
  weights: 'model.safetensors',
  tokenizer: 'tokenizer.json',
});

/**
 * Picks the model's files out of a list of File objects (a folder's contents, or files chosen one
 * by one): GPT-2's four when vocab.json is there, else the three with tokenizer.json. Other files
 * (the hub's pytorch_model.bin, ...) are ignored. Throws an Error naming what is missing. Returns
 * { name, files: { config, weights, vocab, merges } or { config, weights, tokenizer }, bytes }.
 * `folder` names the model when the files carry no folder (webkitRelativePath).
 */
export function modelFromFiles(fileList, folder = '') {
  const files = [...fileList];
  if (files.length === 0) throw new Error('no files were chosen');
  const byName = new Map();
  for (const f of files) {
    const path = f.webkitRelativePath || f.relativePath || f.name;
    const depth = path.split('/').length;
    const prev = byName.get(f.name);
    // a file at the folder's top wins over one of the same name in a subfolder
    if (!prev || depth < prev.depth) byName.set(f.name, { file: f, depth, path });
  }
  // GPT-2's four, or the three with tokenizer.json; a folder with both (the hub's often are) keeps
  // them all, and readModelFiles() goes by what config.json's model_type says
  const both = byName.has(TOKENIZER_JSON_MODEL_FILES.tokenizer) && byName.has(MODEL_FILES.vocab);
  const layout = both
    ? { ...MODEL_FILES, tokenizer: TOKENIZER_JSON_MODEL_FILES.tokenizer }
    : byName.has(TOKENIZER_JSON_MODEL_FILES.tokenizer)
      ? TOKENIZER_JSON_MODEL_FILES
      : MODEL_FILES;
  const missing = Object.values(layout).filter((n) => !byName.has(n) && !(both && n === MODEL_FILES.merges));
  const first = byName.get(MODEL_FILES.config) ?? [...byName.values()][0];
  const name = folder || (first.path.includes('/') ? first.path.split('/').slice(-2, -1)[0] : '') || 'local model';
  if (missing.length) {
    const hint =
      byName.has('pytorch_model.bin') || files.some((f) => f.name.endsWith('.bin'))
        ? ' This folder has PyTorch .bin weights only: headscope reads model.safetensors (the hub offers it for gpt2 and distilgpt2).'
        : '';
    throw new Error(
      `"${name}" is missing ${missing.join(', ')}: a model folder needs ${Object.values(MODEL_FILES).join(', ')} ` +
        `(GPT-2) or ${Object.values(TOKENIZER_JSON_MODEL_FILES).join(', ')} (the Llama family).${hint}`,
    );
  }
  const picked = Object.fromEntries(Object.entries(layout).map(([key, n]) => [key, byName.get(n).file]));
  const bytes = Object.values(picked).reduce((s, f) => s + f.size, 0);
  return { name, files: picked, bytes };
}

/**
 * Reads the picked files into buffers for loadModel(): { name, config, weights, vocab, merges } or
 * { name, config, weights, tokenizer }, the weights left as their File. With both kinds of tokenizer files, config.json's model_type
 * picks: tokenizer.json for the Llama family (its vocab.json lacks the split, the normalizer and the
 * special tokens), vocab.json + merges.txt for GPT-2.
 */
export async function readModelFiles({ name, files }) {
  const read = async (file) => {
    try {
      return await file.arrayBuffer();
    } catch (e) {
      throw new Error(`could not read ${file.name}: ${e.message}`);
    }
  };
  let chosen = files;
  if (files.tokenizer && files.vocab) {
    const config = new TextDecoder().decode(await read(files.config));
    const { tokenizer, vocab, merges, ...rest } = files;
    if (tokenizerKind(config) === 'tokenizer') chosen = { ...rest, tokenizer };
    else if (merges) chosen = { ...rest, vocab, merges };
    else
      throw new Error(
        `"${name}" is missing merges.txt: a GPT-2 model folder needs ${Object.values(MODEL_FILES).join(', ')}.`,
      );
  }
  // the weights stay a File: the engine reads them a tensor at a time (weightSource in web/lib/files.js),
  // so a checkpoint past 2 GiB opens, and none is held whole in the page or the worker
  const entries = await Promise.all(
    Object.entries(chosen).map(async ([key, file]) => [key, key === 'weights' ? file : await read(file)]),
  );
  return { name, ...Object.fromEntries(entries) };
}

// Every file under a dropped directory entry (the File and Directory Entries API), with its path.
async function filesOfEntry(entry, prefix = '') {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    Object.defineProperty(file, 'relativePath', { value: `${prefix}${entry.name}` });
    return [file];
  }
  if (!entry.isDirectory) return [];
  const reader = entry.createReader();
  const children = [];
  for (;;) {
    // readEntries returns the directory in batches, and an empty batch at the end
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (batch.length === 0) break;
    children.push(...batch);
  }
  const nested = await Promise.all(children.map((c) => filesOfEntry(c, `${prefix}${entry.name}/`)));
  return nested.flat();
}

/** The files of a drop: a dropped folder is walked; dropped files are taken as they are. */
export async function filesFromDrop(dataTransfer) {
  const entries = [...(dataTransfer.items || [])].map((item) => item.webkitGetAsEntry?.()).filter(Boolean);
  if (entries.length && entries.some((e) => e.isDirectory)) {
    const folder = entries.length === 1 ? entries[0].name : '';
    return { files: (await Promise.all(entries.map((e) => filesOfEntry(e)))).flat(), folder };
  }
  return { files: [...(dataTransfer.files || [])], folder: '' };
}

/**
 * Wires a "folder" input, a "files" input and drag and drop on `dropTarget` to `onModel(picked)`
 * (the result of modelFromFiles) or `onError(error)`. While a drag is over the page,
 * dropTarget gets the class `drop-active`.
 */
export function installLocalModelPicker({ folderInput, filesInput, dropTarget, onModel, onError }) {
  const take = (files, folder) => {
    try {
      onModel(modelFromFiles(files, folder));
    } catch (e) {
      onError(e);
    }
  };
  for (const input of [folderInput, filesInput]) {
    input?.addEventListener('change', () => {
      if (input.files.length) take(input.files, '');
      input.value = ''; // choosing the same folder again fires change again
    });
  }
  let depth = 0;
  dropTarget.addEventListener('dragenter', (e) => {
    if (!e.dataTransfer?.types?.includes('Files')) return;
    depth++;
    dropTarget.classList.add('drop-active');
  });
  dropTarget.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) dropTarget.classList.remove('drop-active');
  });
  dropTarget.addEventListener('dragover', (e) => {
    if (!e.dataTransfer?.types?.includes('Files')) return;
    e.preventDefault(); // allows the drop
    e.dataTransfer.dropEffect = 'copy';
  });
  dropTarget.addEventListener('drop', async (e) => {
    if (!e.dataTransfer?.types?.includes('Files')) return;
    e.preventDefault();
    depth = 0;
    dropTarget.classList.remove('drop-active');
    try {
      const { files, folder } = await filesFromDrop(e.dataTransfer);
      take(files, folder);
    } catch (err) {
      onError(err);
    }
  });
}

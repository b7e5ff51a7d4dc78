// Hands a model trained on the training page to the demo: the four files are kept in this site's
// IndexedDB (nothing leaves the browser), and the demo opens them with ?trained=1.
const DB = 'headscope';
const STORE = 'trained';
const KEY = 'latest';

function openDb() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`cannot open this site's storage: ${req.error?.message ?? 'unknown error'}`));
  });
}

function request(db, mode, fn) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const req = fn(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(req.result);
    tx.onerror = () => reject(new Error(`this site's storage failed: ${tx.error?.message ?? 'unknown error'}`));
  });
}

/** Keeps { config, weights, vocab, merges } and a name and text for the demo (replacing the last one). */
export async function saveTrainedModel({ files, name, text }) {
  const db = await openDb();
  try {
    await request(db, 'readwrite', (s) => s.put({ files, name, text }, KEY));
  } finally {
    db.close();
  }
}

/** The last model saved by the training page: { files, name, text }, or null. */
export async function loadTrainedModel() {
  const db = await openDb();
  try {
    return (await request(db, 'readonly', (s) => s.get(KEY))) ?? null;
  } finally {
    db.close();
  }
}

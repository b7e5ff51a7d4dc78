// What the demo does when a folder's model is refused for its size: which smaller weight storage to
// try (pure: tested in Node, tests/js/unit/smaller-storage.test.js).

/**
 * The smaller weight storage a load refused for its size says would fit ('f16', else 'q8'), or null:
 * the engine's refusal names them ("it would fit with weights in F16: loadModel(source, { weights:
 * 'f16' })", "... with 8-bit weights: ... { weights: 'q8' }"). F16 first: it changes the numbers less.
 */
export function smallerStorageFor(error) {
  const message = String(error?.message ?? error);
  if (!/would fit/.test(message)) return null;
  if (/weights: 'f16'/.test(message)) return 'f16';
  if (/weights: 'q8'/.test(message)) return 'q8';
  return null;
}

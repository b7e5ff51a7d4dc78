// Shared by the node tests: which model to test on, and paths.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const repo = fileURLToPath(new URL('../../../', import.meta.url));
export const dist = new URL('../../../dist/', import.meta.url);

// The shipped default model once it exists; a fixture (random weights) until then.
export const defaultModelShipped = existsSync(new URL('models/headscope-base/model.safetensors', dist));
export const testModelUrl = defaultModelShipped
  ? new URL('models/headscope-base/', dist)
  : new URL('../../fixtures/models/odd-hs12/', import.meta.url);
export const testModelDir = fileURLToPath(testModelUrl);

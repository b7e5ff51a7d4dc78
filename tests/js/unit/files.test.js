// The shipped models' names (web/lib/files.js): read from the one list, web/models/index.json
// (written by scripts/train/summarize.py from the model cards), not repeated in code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { shippedModels, defaultModelName, modelFileUrls } from '../../../web/lib/files.js';

const index = JSON.parse(readFileSync(new URL('../../../web/models/index.json', import.meta.url), 'utf8'));

test('shippedModels are the names of web/models/index.json, in its order, the default among them', () => {
  assert.deepEqual(
    [...shippedModels],
    index.models.map((m) => m.name),
  );
  assert.ok(Object.isFrozen(shippedModels));
  assert.equal(defaultModelName, index.default);
  assert.ok(shippedModels.includes(defaultModelName));
});

test('every shipped model has its folder under web/models/ and is found by name beside the package', () => {
  for (const name of shippedModels) {
    assert.ok(
      existsSync(new URL(`../../../web/models/${name}/config.json`, import.meta.url)),
      `web/models/${name}/config.json`,
    );
    const { name: found, urls } = modelFileUrls(name);
    assert.equal(found, name);
    assert.ok(urls.config.href.endsWith(`/models/${name}/config.json`), urls.config.href);
  }
});

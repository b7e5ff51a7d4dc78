// The published .d.ts files declare exactly the values their modules export: a name declared but not
// exported would type-check in a consumer and be undefined at run time; a name exported but not
// declared would be untyped. (What each declaration says is checked by tests/types/run.sh, tsc.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dist } from './helpers.js';

// `export declare const|function|class NAME` and `export { A, B } from` of the hand-written
// declarations (interfaces and types have no value at run time)
function declaredValues(dts) {
  const names = [...dts.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]);
  for (const m of dts.matchAll(/^export \{([^}]*)\}/gm))
    names.push(
      ...m[1]
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
  return names.sort();
}

for (const name of ['headscope', 'headscope-worker', 'analysis']) {
  test(`${name}.d.ts declares exactly the values ${name}.js exports`, async () => {
    const declared = declaredValues(readFileSync(new URL(`${name}.d.ts`, dist), 'utf8'));
    const exported = Object.keys(await import(new URL(`${name}.js`, dist).href)).sort();
    assert.deepEqual(declared, exported);
  });
}

// The component modules define custom elements at import (they need a DOM), and they also export the
// demo page's building blocks, which are not a public API: every value their .d.ts declares must be
// among the bundle's exports (read from its final export statement).
for (const name of ['headscope-view', 'headscope-lab']) {
  test(`${name}.d.ts declares only values ${name}.js exports, and registers its element`, () => {
    const declared = declaredValues(readFileSync(new URL(`${name}.d.ts`, dist), 'utf8'));
    const bundle = readFileSync(new URL(`${name}.js`, dist), 'utf8');
    const list = /export\s*\{([^}]*)\};?\s*$/.exec(bundle);
    assert.ok(list, `${name}.js ends with an export statement`);
    const exported = list[1]
      .split(',')
      .map((s) =>
        s
          .trim()
          .split(/\s+as\s+/)
          .pop(),
      )
      .filter(Boolean);
    assert.ok(declared.length > 0);
    for (const value of declared)
      assert.ok(exported.includes(value), `${value} is declared but ${name}.js does not export it`);
    assert.match(
      readFileSync(new URL(`${name}.d.ts`, dist), 'utf8'),
      new RegExp(`interface HTMLElementTagNameMap \\{\\s*'${name}'`),
    );
  });
}

// axe-core (npm) on a page of the e2e tests, the pages under their strict CSP: axe is evaluated
// through the DevTools protocol, which a page's policy does not govern.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from './fixtures.mjs';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe on the page (or only on the element `selector` names); returns its serious and critical
 * violations as readable lines. axe adds <style> elements of its own, which the pages' strict CSP
 * refuses: the problems found so far must be none, and from here on those refusals are expected.
 */
export async function seriousViolations(page, problems, selector = null) {
  expect(problems.unexpected, 'console errors, page errors, dialogs or CSP violations before axe ran').toEqual([]);
  problems.allow(
    /^CSP violation: style-src-elem inline$/,
    /^console error: Applying inline style violates the following Content Security Policy directive 'style-src 'self''/,
  );
  await page.evaluate(AXE);
  return page.evaluate(
    async (selector) =>
      (await (selector ? window.axe.run(selector) : window.axe.run())).violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map(
          (v) =>
            `${v.id} (${v.impact}, ${v.nodes.length}x): ${v.nodes[0].target.join(' ')} - ${v.nodes[0].failureSummary.split('\n')[1]?.trim()}`,
        ),
    selector,
  );
}

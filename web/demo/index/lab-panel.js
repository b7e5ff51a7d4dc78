// The demo page's lab panel: switch heads off, head-role badges, knock-out ranking,
// predict-then-reveal. The logic lives in web/component/lab/lab.js (shared with <headscope-lab>);
// this file places it on the page and connects it to demo.js's runner, grid and state.
// demo.js calls installLab() once the model is loaded and lab.update(result) after each render;
// its runner adds state.ablate, which the lab keeps current, to every run.
import { Lab, parseAblate, formatAblate } from '../../component/lab/lab.js';

const $ = (id) => document.getElementById(id);

/**
 * ctx: { state, runner, grid, getModel, getResult, render, selectHead }
 * Returns the Lab (with update(result)).
 */
export function installLab(ctx) {
  const { state, runner, grid } = ctx;
  const initial = parseAblate(new URLSearchParams(location.search).get('off'));

  // the panel, after the grid's panel (replacing the previous model's)
  document.getElementById('lab')?.remove();
  const section = document.createElement('section');
  section.className = 'panel panel-lab';
  section.id = 'lab';
  section.setAttribute('aria-labelledby', 'lab-title');
  const head = document.createElement('div');
  head.className = 'panel-head';
  const h2 = document.createElement('h2');
  h2.id = 'lab-title';
  h2.textContent = 'Experiment with the heads';
  head.appendChild(h2);
  section.appendChild(head);
  const body = document.createElement('div');
  section.appendChild(body);
  const gridPanel = document.querySelector('.panel-grid');
  if (gridPanel) gridPanel.after(section);
  else $('app').appendChild(section);

  // a link to the head-count comparison
  const actions = document.querySelector('.top-actions');
  if (actions && !$('compare-link')) {
    const a = document.createElement('a');
    a.id = 'compare-link';
    a.className = 'btn lab-compare-link';
    a.href = 'compare.html';
    a.textContent = 'Compare 1, 2, 4, 8 heads';
    actions.prepend(a);
  }

  const gridHost = $('grid');
  const lab = new Lab(body, {
    grid,
    gridHost,
    initialAblate: initial,
    getModel: ctx.getModel,
    typing: () => runner.busy || !!runner.pending, // the probes wait while the page's runs go
    getProbeSentences: () => ctx.card?.roles?.probe_sentences,
    getResult: ctx.getResult,
    getText: () => state.text,
    getState: () => ({ layer: state.layer, head: state.head, token: state.token }),
    onAblate: (pairs) => {
      state.ablate = pairs;
      runner.request(state.text);
      writeUrl(pairs);
    },
    onSelect: (l, h) => ctx.selectHead(l, h, false),
    onUpdated: () => {
      if (lab.ablate.length) writeUrl(lab.ablate);
      document.body.dataset.labAblated = String(lab.ablate.length);
    },
    onHidePattern: (l) => {
      document.body.classList.toggle('lab-quiz-asking', l !== null);
      ctx.render();
    },
  });

  state.ablate = lab.ablate;
  if (initial.length) runner.request(state.text);

  // keep ?off=... in the URL next to demo.js's own state (it rewrites the query after renders)
  function writeUrl(pairs) {
    clearTimeout(writeUrl.timer);
    writeUrl.timer = setTimeout(() => {
      const q = new URLSearchParams(location.search);
      if (pairs.length) q.set('off', formatAblate(pairs));
      else q.delete('off');
      history.replaceState(null, '', `${location.pathname}?${q.toString()}`);
    }, 400);
  }
  window.headscopeLab = lab; // for the end-to-end tests and curious readers
  return lab;
}

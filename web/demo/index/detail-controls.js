// The detail panel's controls: its tabs (heatmap | lines, arrow keys between them), "Links per
// token" for the lines view, and the layer and head pickers.
const $ = (id) => document.getElementById(id);

/**
 * `state`: the page's state (view, links, layer, head); `onView()`: the tab changed state.view;
 * `selectHead(layer, head, focus)`, `render()`: the page's. Gives fill(result): the pickers hold
 * the result's layers and heads, the state's selected.
 */
export function installDetailControls({ state, onView, selectHead, render }) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  function markTabs() {
    for (const tab of tabs) {
      const on = tab.dataset.view === state.view;
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
      tab.tabIndex = on ? 0 : -1;
    }
    $('detail-view').setAttribute('aria-labelledby', `tab-${state.view}`);
  }
  function setView(view) {
    if (view === state.view) return;
    state.view = view;
    markTabs();
    onView();
  }
  for (const tab of tabs) {
    tab.addEventListener('click', () => setView(tab.dataset.view));
    tab.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
      const next = tab.dataset.view === 'heatmap' ? 'lines' : 'heatmap';
      setView(next);
      $(`tab-${next}`).focus();
    });
  }
  markTabs();

  const linksSelect = $('links-select');
  if (Number.isInteger(state.links)) linksSelect.value = String(state.links);
  linksSelect.addEventListener('change', () => {
    state.links = Number(linksSelect.value);
    render();
  });

  $('layer-select').addEventListener('change', (e) => selectHead(Number(e.target.value), state.head, false));
  $('head-select').addEventListener('change', (e) => selectHead(state.layer, Number(e.target.value), false));

  function fillSelect(select, n, value, word) {
    if (select.options.length !== n) {
      select.replaceChildren(...Array.from({ length: n }, (_, i) => new Option(`${word} ${i}`, String(i))));
    }
    if (select.value !== String(value)) select.value = String(value);
  }

  return {
    fill(result) {
      fillSelect($('layer-select'), result.nLayer, state.layer, 'layer');
      fillSelect($('head-select'), result.nHead, state.head, 'head');
    },
  };
}

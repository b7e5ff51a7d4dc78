// The example articles (component.html, csp.html, lab-component.html) accept ?model=<shipped name or
// folder URL> to point every widget at another model, and lab-component.html ?ablate=layer:head,...
// for its lab. Runs before headscope-view.js and headscope-lab.js define the elements, so widgets
// load only that model.
const q = new URLSearchParams(location.search);
const model = q.get('model');
if (model)
  for (const el of document.querySelectorAll('headscope-lab:not([model]), headscope-view:not([model])'))
    el.setAttribute('model', model);
const ablate = q.get('ablate');
if (ablate) for (const el of document.querySelectorAll('headscope-lab')) el.setAttribute('ablate', ablate);

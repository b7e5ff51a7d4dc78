// lab-component.html accepts ?model=<shipped name or folder URL> (and ?ablate=layer:head,...) for
// every widget. Runs before the elements are defined, so widgets load only that model.
const q = new URLSearchParams(location.search);
const model = q.get('model');
if (model) for (const el of document.querySelectorAll('headscope-lab:not([model]), headscope-view:not([model])')) el.setAttribute('model', model);
const ablate = q.get('ablate');
if (ablate) for (const el of document.querySelectorAll('headscope-lab')) el.setAttribute('ablate', ablate);

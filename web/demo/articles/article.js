// Example pages accept ?model=<shipped name or folder URL> to point every widget at another model.
// Runs before headscope-view.js defines the element, so widgets load only that model.
const model = new URLSearchParams(location.search).get('model');
if (model) for (const el of document.querySelectorAll('headscope-view:not([model])')) el.setAttribute('model', model);

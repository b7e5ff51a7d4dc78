// The page's light/dark theme: the reader's preference, a choice stored in localStorage, or
// ?theme= in the URL. onChange(theme) receives the theme the views read (theme.js).
import { readTheme } from '../../component/headscope-view.js';

const THEME_KEY = 'headscope-theme';

function storedTheme() {
  try {
    return localStorage.getItem(THEME_KEY);
  } catch {
    return null;
  }
}

function currentScheme() {
  const forced = document.documentElement.dataset.theme;
  if (forced) return forced;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Wires the toggle button; calls onChange with the current theme now and on every change. */
export function installThemeToggle(button, onChange) {
  const apply = (name) => {
    if (name) document.documentElement.dataset.theme = name;
    const dark = currentScheme() === 'dark';
    button.textContent = dark ? 'Light theme' : 'Dark theme';
    button.setAttribute('aria-pressed', dark ? 'true' : 'false');
    onChange(readTheme(document.documentElement));
  };
  button.addEventListener('click', () => {
    const next = currentScheme() === 'dark' ? 'light' : 'dark';
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      /* private mode */
    }
    apply(next);
  });
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => apply());
  const urlTheme = new URLSearchParams(location.search).get('theme');
  apply(urlTheme === 'dark' || urlTheme === 'light' ? urlTheme : storedTheme());
}

/** Light or dark: the system's preference unless the user picked one (kept in this browser). */
export type Theme = 'light' | 'dark';

const KEY = 'aerie-theme';
const media = window.matchMedia('(prefers-color-scheme: dark)');

function readStored(): Theme | null {
  try {
    const value = window.localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    return null;
  }
}

let chosen: Theme | null = readStored();
const listeners = new Set<() => void>();

/** The theme the user picked, or null to follow the system. */
export function storedTheme(): Theme | null {
  return chosen;
}

export function effectiveTheme(): Theme {
  return storedTheme() ?? (media.matches ? 'dark' : 'light');
}

/** Sets `data-theme` on <html> when the user chose; otherwise the stylesheet follows the system. */
export function applyTheme(): void {
  if (chosen === null) delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = chosen;
}

export function chooseTheme(theme: Theme | null): void {
  chosen = theme;
  try {
    if (theme === null) window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, theme);
  } catch {
    // Storage refused (private mode): the choice lasts for this page only.
  }
  applyTheme();
  for (const listener of listeners) listener();
}

/** Calls `listener` when the theme in effect may have changed (a choice, or the system's). */
export function subscribeTheme(listener: () => void): () => void {
  listeners.add(listener);
  media.addEventListener('change', listener);
  return () => {
    listeners.delete(listener);
    media.removeEventListener('change', listener);
  };
}

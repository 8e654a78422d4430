/**
 * A small router on the History API: the URL is the state (pages, filters, page numbers), so
 * every view can be shared, bookmarked and reached with Back.
 */
import { useMemo, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', notify);

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

export function navigate(to: string, { replace = false }: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  notify();
}

export interface Location {
  pathname: string;
  search: URLSearchParams;
  /** pathname + search, as navigate takes it. */
  href: string;
}

export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, snapshot);
  return useMemo(() => {
    const url = new URL(href, window.location.origin);
    return { pathname: url.pathname.replace(/\/+$/, '') || '/', search: url.searchParams, href };
  }, [href]);
}

/** The same path with some query parameters set (null or '' removes one). */
export function withParams(location: Location, changes: Record<string, string | number | null>): string {
  const search = new URLSearchParams(location.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === '') search.delete(key);
    else search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? location.pathname : `${location.pathname}?${text}`;
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string; current?: boolean };

/** An ordinary link (it opens in a new tab, copies, reads aloud as one) that navigates in place. */
export function Link({ to, current, onClick, children, ...rest }: LinkProps) {
  const handle = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <a href={to} onClick={handle} aria-current={current ? 'page' : undefined} {...rest}>
      {children}
    </a>
  );
}

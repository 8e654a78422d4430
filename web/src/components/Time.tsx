import { useSyncExternalStore } from 'react';
import { formatAbsolute, formatRelative } from '../format.ts';

let now = Date.now();
const listeners = new Set<() => void>();
setInterval(() => {
  now = Date.now();
  for (const listener of listeners) listener();
}, 15_000);

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/** The current time, renewed every 15 seconds, for relative times. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now);
}

/**
 * "5 minutes ago", with the exact time as its tooltip (and machine-readable); with `exact`, the
 * exact time is shown after it too: "in 5 hours (26 Nov 2026, 03:00:00 UTC)".
 */
export function Time({ iso, exact = false }: { iso: string; exact?: boolean }) {
  const now = useNow();
  const absolute = formatAbsolute(iso);
  return (
    <time dateTime={iso} title={exact ? undefined : absolute}>
      {formatRelative(iso, now)}
      {exact ? <span className="muted"> ({absolute})</span> : null}
    </time>
  );
}

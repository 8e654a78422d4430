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

/** "5 minutes ago", with the exact time as its tooltip (and machine-readable). */
export function Time({ iso }: { iso: string }) {
  const now = useNow();
  const exact = formatAbsolute(iso);
  return (
    <time dateTime={iso} title={exact}>
      {formatRelative(iso, now)}
    </time>
  );
}

import { useEffect, useState } from 'react';
import { formatAbsolute, formatRelative } from '../format.ts';

let ticks = 0;
const tickers = new Set<() => void>();
setInterval(() => {
  ticks += 1;
  for (const tick of tickers) tick();
}, 15_000);

/** The current time, renewed every 15 seconds, for relative times. */
export function useNow(): number {
  const [, setTick] = useState(ticks);
  useEffect(() => {
    const tick = () => setTick(ticks);
    tickers.add(tick);
    return () => {
      tickers.delete(tick);
    };
  }, []);
  return Date.now();
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

/** A source of the current time; services take one so tests can control it. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/**
 * Timestamps are stored as fixed-width UTC ISO strings (`2026-11-22T03:49:51.123Z`): they sort
 * correctly as text, read the same on every database, and keep millisecond precision.
 */
export function toStoredTime(date: Date): string {
  return date.toISOString();
}

/** The wire format of every timestamp: `YYYY-MM-DDTHH:mm:ss+00:00`, UTC. */
export function toWireTime(stored: string): string;
export function toWireTime(stored: string | null): string | null;
export function toWireTime(stored: string | null): string | null {
  if (stored === null) return null;
  return `${stored.slice(0, 19)}+00:00`;
}

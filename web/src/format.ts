import type { Progress } from './api/types.ts';

const counts = new Intl.NumberFormat('en');

/** "1 file", "2 files", "0 entries", "12,345 files": a count with its noun in the number it takes. */
export function plural(count: number, one: string, other = `${one}s`): string {
  return `${counts.format(count)} ${count === 1 ? one : other}`;
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

/** A finished backup's size and, when known, its files: "378 KB, 1 file", "2.1 GB, 12,345 files". */
export function formatBackupSize(bytes: number, files: number | null): string {
  return files === null ? formatBytes(bytes) : `${formatBytes(bytes)}, ${plural(files, 'file')}`;
}

const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 30],
  ['month', 12],
  ['year', Number.POSITIVE_INFINITY],
];

/** "3 minutes ago", "yesterday", "in 2 hours". */
export function formatRelative(iso: string, now: number): string {
  let amount = (new Date(iso).getTime() - now) / 1000;
  // `now` is renewed every 15 s, so a moment ago can look up to a few seconds ahead of it.
  if (Math.abs(amount) < 10 || (amount > 0 && amount < 30)) return 'just now';
  for (const [unit, size] of STEPS) {
    if (Math.abs(amount) < size) return relative.format(Math.round(amount), unit);
    amount /= size;
  }
  return relative.format(Math.round(amount), 'year');
}

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'long' });

export function formatAbsolute(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : absolute.format(date);
}

/** "about 3 min", "less than a minute", "about 2 h 5 min". */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return 'less than a minute';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `about ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  return rest === 0 ? `about ${hours} h` : `about ${hours} h ${rest} min`;
}

export interface ProgressFigures {
  /** 0–100, or null when no total is known or can be guessed. */
  percent: number | null;
  /** Seconds left at the rate so far, or null until that rate can be measured. */
  secondsLeft: number | null;
  /** Whether the total is a guess (a backup's size from the one before it). */
  estimated: boolean;
}

/**
 * How far a backup or restore is: by bytes when their total is known, else by files, else (a
 * backup, whose size is known only at its end) against `guessBytes`, the size of the backup
 * before it, never past 99% until it ends. The time left assumes the rate so far holds, and is
 * told only once there is a rate: something moved, over at least RATE_SECONDS since the start
 * (one early sample, a few bytes in a second, would promise minutes for what takes seconds).
 */
export const RATE_SECONDS = 2;

export function progressFigures(progress: Progress, guessBytes: number | null = null): ProgressFigures {
  let done = 0;
  let total: number | null = null;
  let estimated = false;
  // A backup's totals, when it has any, are those of the server's last snapshot: an estimate.
  if (progress.bytes_total !== null && progress.bytes_total > 0) {
    [done, total, estimated] = [progress.bytes_done, progress.bytes_total, progress.operation === 'backup'];
  } else if (progress.files_total !== null && progress.files_total > 0) {
    [done, total, estimated] = [progress.files_done, progress.files_total, progress.operation === 'backup'];
  } else if (guessBytes !== null && guessBytes > 0) {
    [done, total, estimated] = [progress.bytes_done, guessBytes, true];
  }
  if (total === null) return { percent: null, secondsLeft: null, estimated };
  const fraction = Math.min(estimated ? 0.99 : 1, Math.max(0, done / total));
  const elapsed = (new Date(progress.updated_at).getTime() - new Date(progress.started_at).getTime()) / 1000;
  const secondsLeft =
    fraction >= 1
      ? 0
      : fraction > 0 && elapsed >= RATE_SECONDS
        ? (elapsed / fraction) * (1 - fraction)
        : null;
  return { percent: Math.floor(fraction * 100), secondsLeft, estimated };
}

/**
 * A retention policy, and which backups it keeps: restic `forget`'s rules (`--keep-last`,
 * `--keep-hourly`, `--keep-daily`, `--keep-weekly`, `--keep-monthly`, `--keep-yearly`), with no
 * database, clock or store. The caller chooses what the policy is applied to (Aerie: automatic,
 * successful backups) and what may never be deleted whatever it says (locked ones).
 *
 * As restic does it (`internal/data/snapshot_policy.go`):
 *
 * - the backups are taken newest first;
 * - `last N` keeps the N newest;
 * - `hourly N` (daily, weekly, monthly, yearly alike) keeps, for each of the N most recent hours
 *   that have a backup, the newest backup of that hour; hours, days, weeks (ISO weeks, Monday to
 *   Sunday), months and years are calendar ones in the policy's time zone, not spans counted
 *   back from now;
 * - a rule that has counts left when it reaches the oldest backup keeps that one too ("oldest
 *   daily 2026-11-20"): with fewer days of backups than it asks for, the history kept reaches as
 *   far back as it can (restic 0.17's rule);
 * - a backup is kept if any rule keeps it (it is kept once, with every rule's reason); every
 *   other backup is removed;
 * - a policy with no rule (every count null or 0) keeps everything: as restic refuses an empty
 *   policy, Aerie never reads one as "delete them all".
 */

export const RETENTION_RULES = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;
export type RetentionRule = (typeof RETENTION_RULES)[number];

/** How many of each to keep; null (or 0) for a rule that is off. */
export type RetentionPolicy = Record<RetentionRule, number | null>;

/** What the policy needs of a backup: something to tell it by, and when it was made. */
export interface Dated {
  id: string;
  /** An ISO-8601 time (`2026-11-20T14:03:00.000Z`). */
  createdAt: string;
}

export interface RetentionDecision<T extends Dated> {
  /** Newest first, each with why it is kept (`last 1`, `daily 2026-11-20`, `weekly 2026-W47`). */
  keep: { backup: T; reasons: string[] }[];
  /** Newest first. */
  remove: T[];
}

export const NO_POLICY: RetentionPolicy = {
  last: null,
  hourly: null,
  daily: null,
  weekly: null,
  monthly: null,
  yearly: null,
};

/** Whether the policy has a rule that keeps anything (with none, nothing is ever removed). */
/**
 * The policy as its `keep_*` fields: the names of the API's attributes and of the
 * `backup_retention` columns alike.
 */
export function keepFieldsOf(policy: RetentionPolicy) {
  return {
    keep_last: policy.last,
    keep_hourly: policy.hourly,
    keep_daily: policy.daily,
    keep_weekly: policy.weekly,
    keep_monthly: policy.monthly,
    keep_yearly: policy.yearly,
  };
}

export function hasRules(policy: RetentionPolicy): boolean {
  return RETENTION_RULES.some((rule) => (policy[rule] ?? 0) > 0);
}

/** Newest first; of two made at the same moment, the greater id first (the backup list's order). */
export function newestFirst<T extends Dated>(a: T, b: T): number {
  const byTime = Date.parse(b.createdAt) - Date.parse(a.createdAt);
  if (byTime !== 0) return byTime;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** Which of `backups` the policy keeps and why, and which it removes, with calendars in `timeZone`. */
export function applyRetention<T extends Dated>(
  backups: readonly T[],
  policy: RetentionPolicy,
  timeZone = 'UTC',
): RetentionDecision<T> {
  const sorted = [...backups].sort(newestFirst);
  if (!hasRules(policy)) {
    return { keep: sorted.map((backup) => ({ backup, reasons: [] })), remove: [] };
  }
  const calendar = calendarOf(timeZone);
  const buckets = RETENTION_RULES.map((rule) => ({
    rule,
    left: policy[rule] ?? 0,
    last: undefined as string | undefined,
  }));
  const decision: RetentionDecision<T> = { keep: [], remove: [] };
  sorted.forEach((backup, index) => {
    const when = calendar(new Date(backup.createdAt));
    const oldest = index === sorted.length - 1;
    const reasons: string[] = [];
    for (const bucket of buckets) {
      if (bucket.left <= 0) continue;
      // `last` gives every backup a bucket of its own: its place, newest first.
      const label = bucket.rule === 'last' ? String(index + 1) : when[bucket.rule];
      if (label === bucket.last && !oldest) continue;
      reasons.push(label === bucket.last ? `oldest ${bucket.rule} ${label}` : `${bucket.rule} ${label}`);
      bucket.last = label;
      bucket.left -= 1;
    }
    if (reasons.length > 0) decision.keep.push({ backup, reasons });
    else decision.remove.push(backup);
  });
  return decision;
}

type CalendarRule = Exclude<RetentionRule, 'last'>;

/**
 * The hour, day, ISO week, month and year a moment falls in, in a time zone, as labels that are
 * equal exactly when two moments share that period: `2026-11-20 14:00`, `2026-11-20`,
 * `2026-W47`, `2026-11`, `2026`.
 */
export function calendarOf(timeZone: string): (moment: Date) => Record<CalendarRule, string> {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    hourCycle: 'h23',
  });
  return (moment) => {
    const parts: Record<string, string> = {};
    for (const part of format.formatToParts(moment)) parts[part.type] = part.value;
    const year = Number(parts.year);
    const month = Number(parts.month);
    const day = Number(parts.day);
    const ymd = `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
    const week = isoWeek(year, month, day);
    return {
      hourly: `${ymd} ${pad(Number(parts.hour))}:00`,
      daily: ymd,
      weekly: `${pad(week.year, 4)}-W${pad(week.week)}`,
      monthly: `${pad(year, 4)}-${pad(month)}`,
      yearly: pad(year, 4),
    };
  };
}

/** The ISO-8601 week of a calendar date: weeks start on Monday, week 1 holds the year's first Thursday. */
export function isoWeek(year: number, month: number, day: number): { year: number; week: number } {
  const date = new Date(Date.UTC(year, month - 1, day));
  const weekday = date.getUTCDay() === 0 ? 7 : date.getUTCDay();
  // The Thursday of this week decides the week's year.
  date.setUTCDate(date.getUTCDate() + 4 - weekday);
  const weekYear = date.getUTCFullYear();
  const dayOfYear = Math.floor((date.getTime() - Date.UTC(weekYear, 0, 1)) / 86_400_000) + 1;
  return { year: weekYear, week: Math.ceil(dayOfYear / 7) };
}

function pad(value: number, width = 2): string {
  return String(value).padStart(width, '0');
}

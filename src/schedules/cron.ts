import { Cron } from 'croner';
import { DisplayError } from '../shared/errors.ts';

/** The five fields of a schedule's cron expression, as the API names them. */
export interface CronFields {
  minute: string;
  hour: string;
  day_of_month: string;
  month: string;
  day_of_week: string;
}

/** The fields in the order a cron expression writes them. */
export const CRON_FIELDS = ['minute', 'hour', 'day_of_month', 'month', 'day_of_week'] as const;

/** Pterodactyl's words for an expression that does not evaluate. */
export const INVALID_CRON = 'The cron data provided does not evaluate to a valid expression.';

/**
 * A schedule's expression read with croner, in `timezone` (AERIE_TIMEZONE), as a classic
 * five-field cron: minute precision, day of month and day of week OR-ed when both are given (as
 * Vixie cron and Pterodactyl's library do), Sunday as 0 or 7, names (`MON`, `JAN`), `L`.
 *
 * On the days the clocks change, croner's rules: a time that does not exist (02:30 on the last
 * Sunday of March in Europe/Berlin) runs at the first minute after the gap, once, for an
 * expression of one minute and one hour (`30 2 * * *`); one that repeats (02:30 on the last Sunday
 * of October) runs once, at its first occurrence. An expression with wildcards, steps or lists in
 * its minute or hour (`*\/15 * * * *`) runs on both occurrences and skips the missing hour.
 */
function cron(fields: CronFields, timezone: string): Cron {
  const pattern = CRON_FIELDS.map((field) => fields[field]).join(' ');
  return new Cron(pattern, { timezone, paused: true, mode: '5-part' });
}

/** The first time the expression names after `after` (strictly), or null when none comes. */
export function nextRunAfter(fields: CronFields, after: Date, timezone: string): Date | null {
  return cron(fields, timezone).nextRun(after);
}

/**
 * The next time after `now`, for a schedule being created or changed; a DisplayError with
 * Pterodactyl's message when the expression does not evaluate, whose `meta` names the first field
 * at fault and why (better than the reference panel, which names none).
 */
export function checkedNextRun(fields: CronFields, now: Date, timezone: string): Date {
  for (const field of CRON_FIELDS) {
    const problem = fieldProblem(field, fields[field], timezone);
    if (problem !== null) throw invalid(field, problem);
  }
  let next: Date | null;
  try {
    next = nextRunAfter(fields, now, timezone);
  } catch (error) {
    throw invalid('minute', `The expression is not valid: ${reason(error)}.`);
  }
  if (next === null)
    throw invalid('day_of_month', 'The day_of_month and month fields never name a date that exists.');
  return next;
}

/** Why `value` is no cron field of its kind, checked alone (the other fields `*`); null when it is one. */
function fieldProblem(field: (typeof CRON_FIELDS)[number], value: string, timezone: string): string | null {
  if (!/^\S+$/.test(value)) return `The ${field} field must be one cron field, with no spaces.`;
  const alone: CronFields = { minute: '*', hour: '*', day_of_month: '*', month: '*', day_of_week: '*' };
  try {
    cron({ ...alone, [field]: value }, timezone);
    return null;
  } catch (error) {
    return `The ${field} field is not a valid cron field: ${reason(error)}.`;
  }
}

/** croner's reason, without its prefix, entry numbers or trailing period. */
function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message
    .replace(/^CronPattern:\s*/, '')
    .replace(/configuration entry \d+ \(([^)]*)\)/, '"$1"')
    .replace(/\.$/, '');
}

function invalid(field: string, message: string): DisplayError {
  return new DisplayError(INVALID_CRON, { field, rule: 'cron', message });
}

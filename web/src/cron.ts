/**
 * A schedule's cron expression in words, for the common cases ("Every day at 03:00", "Every
 * hour at minute 0", "Every Monday at 04:30"); anything else is shown as the expression itself.
 * Runs in Node as well (test/web/cron-words.test.ts).
 */

/** The five fields, as the API names them. */
export interface CronFields {
  minute: string;
  hour: string;
  day_of_month: string;
  month: string;
  day_of_week: string;
}

/** The fields in the order an expression writes them. */
export const CRON_FIELDS = ['minute', 'hour', 'day_of_month', 'month', 'day_of_week'] as const;

export type CronField = (typeof CRON_FIELDS)[number];

/** `0 3 * * *`. */
export function cronExpression(cron: CronFields): string {
  return CRON_FIELDS.map((field) => cron[field].trim()).join(' ');
}

/** The presets the schedule form offers. */
export const CRON_PRESETS: { id: string; label: string; cron: CronFields }[] = [
  {
    id: 'hourly',
    label: 'Hourly',
    cron: { minute: '0', hour: '*', day_of_month: '*', month: '*', day_of_week: '*' },
  },
  {
    id: 'nightly',
    label: 'Nightly',
    cron: { minute: '0', hour: '3', day_of_month: '*', month: '*', day_of_week: '*' },
  },
  {
    id: 'weekly',
    label: 'Weekly',
    cron: { minute: '30', hour: '4', day_of_month: '*', month: '*', day_of_week: '1' },
  },
];

/** The preset the fields are, if any. */
export function presetOf(cron: CronFields): string | null {
  const expression = cronExpression(cron);
  return CRON_PRESETS.find((preset) => cronExpression(preset.cron) === expression)?.id ?? null;
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const MONTH_NAMES = MONTHS.map((month) => month.slice(0, 3).toUpperCase());

/** A whole number from `min` to `max` written in decimal digits, or null. */
function number(text: string, min: number, max: number): number | null {
  if (!/^\d{1,2}$/.test(text)) return null;
  const value = Number(text);
  return value >= min && value <= max ? value : null;
}

/** A day of the week, 0 (Sunday) to 6; 7 and the names (`MON`) too. */
function weekday(text: string): number | null {
  const named = DAY_NAMES.indexOf(text.toUpperCase());
  if (named !== -1) return named;
  const value = number(text, 0, 7);
  return value === null ? null : value % 7;
}

/** A month, 1 to 12, or its name (`JAN`). */
function month(text: string): number | null {
  const named = MONTH_NAMES.indexOf(text.toUpperCase());
  return named !== -1 ? named + 1 : number(text, 1, 12);
}

/** Numbers in a list (`0,30`), each read by `read`; null if any is not one. */
function list(text: string, read: (item: string) => number | null): number[] | null {
  const values: number[] = [];
  for (const item of text.split(',')) {
    const value = read(item);
    if (value === null) return null;
    values.push(value);
  }
  return values;
}

/** "a", "a and b", "a, b and c". */
function joined(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** "1st", "2nd", "3rd", "11th", "22nd". */
function ordinal(day: number): string {
  const tens = day % 100;
  if (tens >= 11 && tens <= 13) return `${day}th`;
  return `${day}${['th', 'st', 'nd', 'rd'][day % 10] ?? 'th'}`;
}

/** `*\/K` (every K), or null. */
function every(text: string, max: number): number | null {
  const match = /^\*\/(\d{1,2})$/.exec(text);
  if (match?.[1] === undefined) return null;
  const step = Number(match[1]);
  return step >= 1 && step <= max ? step : null;
}

/** Which days: "Every day", "Every Monday", "Every weekday", "Every Monday and Friday"; null if not simple. */
function days(dayOfMonth: string, monthField: string, dayOfWeek: string): string | null {
  const anyDayOfMonth = dayOfMonth === '*' || dayOfMonth === '?';
  const anyDayOfWeek = dayOfWeek === '*' || dayOfWeek === '?';
  if (monthField !== '*') {
    // Once a year: one day of one month.
    const m = month(monthField);
    const d = number(dayOfMonth, 1, 31);
    if (m === null || d === null || !anyDayOfWeek) return null;
    return `Every year on ${d} ${MONTHS[m - 1]}`;
  }
  if (!anyDayOfMonth) {
    if (!anyDayOfWeek) return null;
    if (dayOfMonth.toUpperCase() === 'L') return 'Every month on its last day';
    const d = list(dayOfMonth, (item) => number(item, 1, 31));
    return d === null ? null : `Every month on the ${joined(d.map(ordinal))}`;
  }
  if (anyDayOfWeek) return 'Every day';
  const range = /^(\w+)-(\w+)$/.exec(dayOfWeek);
  if (range?.[1] !== undefined && range[2] !== undefined) {
    // 0 and 7 are both Sunday: a range may end on 7 (`5-7`, Friday to Sunday).
    const from = weekday(range[1]);
    const raw = weekday(range[2]);
    const to = raw === 0 && range[2] !== '0' && range[2].toUpperCase() !== 'SUN' ? 7 : raw;
    if (from === null || to === null || from >= to) return null;
    if (from === 1 && to === 5) return 'Every weekday';
    if (to - from === 6) return 'Every day';
    return `Every day from ${DAYS[from]} to ${DAYS[to % 7]}`;
  }
  const d = list(dayOfWeek, weekday);
  if (d === null) return null;
  const unique = [...new Set(d)];
  if (unique.length === 7) return 'Every day';
  const sorted = unique.sort((a, b) => ((a + 6) % 7) - ((b + 6) % 7)); // Monday first
  if (sorted.length === 2 && sorted[0] === 6 && sorted[1] === 0) return 'Every Saturday and Sunday';
  return `Every ${joined(sorted.map((day) => DAYS[day] ?? String(day)))}`;
}

/**
 * The schedule's expression in words, or, for anything these words do not cover, the
 * expression itself (`cronWords` says which).
 */
export function cronInWords(cron: CronFields): string {
  return cronWords(cron) ?? cronExpression(cron);
}

/** The expression in words, or null when it is not one of the common cases. */
export function cronWords(cron: CronFields): string | null {
  const minute = cron.minute.trim();
  const hour = cron.hour.trim();
  const dayOfMonth = cron.day_of_month.trim();
  const monthField = cron.month.trim();
  const dayOfWeek = cron.day_of_week.trim();
  const everyDay = dayOfMonth === '*' && monthField === '*' && dayOfWeek === '*';

  if (minute === '*' && hour === '*') return everyDay ? 'Every minute' : null;
  const minuteStep = every(minute, 59);
  if (minuteStep !== null) {
    if (hour !== '*' || !everyDay) return null;
    return minuteStep === 1 ? 'Every minute' : `Every ${minuteStep} minutes`;
  }
  const minutes = list(minute, (item) => number(item, 0, 59));
  if (minutes === null) return null;

  if (hour === '*' || every(hour, 23) !== null) {
    if (!everyDay) return null;
    const hourStep = every(hour, 23);
    const at = minutes.length === 1 ? `minute ${minutes[0]}` : `minutes ${joined(minutes.map(String))}`;
    if (hourStep === null || hourStep === 1) return `Every hour at ${at}`;
    return `Every ${hourStep} hours at ${at}`;
  }
  const hours = list(hour, (item) => number(item, 0, 23));
  if (hours === null || hours.length * minutes.length > 6) return null;
  const when = days(dayOfMonth, monthField, dayOfWeek);
  if (when === null) return null;
  const times = hours
    .flatMap((h) => minutes.map((m) => h * 60 + m))
    .sort((a, b) => a - b)
    .map((total) => `${pad(Math.floor(total / 60))}:${pad(total % 60)}`);
  return `${when} at ${joined([...new Set(times)])}`;
}

/**
 * A schedule's cron expression in the panel's words (web/src/cron.ts): the common cases said
 * plainly, anything else shown as the expression itself, never a sentence that says less or
 * other than the expression does.
 */
import { describe, expect, it } from 'vitest';
import {
  CRON_PRESETS,
  cronExpression,
  cronInWords,
  cronWords,
  presetOf,
  type CronFields,
} from '../../web/src/cron.ts';

/** The fields of `minute hour day_of_month month day_of_week`. */
function fields(expression: string): CronFields {
  const [minute = '', hour = '', day_of_month = '', month = '', day_of_week = ''] = expression.split(' ');
  return { minute, hour, day_of_month, month, day_of_week };
}

const words = (expression: string) => cronInWords(fields(expression));

describe('cronInWords', () => {
  it('says the presets plainly', () => {
    expect(words('0 3 * * *')).toBe('Every day at 03:00');
    expect(words('0 * * * *')).toBe('Every hour at minute 0');
    expect(words('30 4 * * 1')).toBe('Every Monday at 04:30');
    expect(CRON_PRESETS.map((preset) => cronInWords(preset.cron))).toEqual([
      'Every hour at minute 0',
      'Every day at 03:00',
      'Every Monday at 04:30',
    ]);
  });

  it('says minutes and hours by their steps', () => {
    expect(words('* * * * *')).toBe('Every minute');
    expect(words('*/1 * * * *')).toBe('Every minute');
    expect(words('*/15 * * * *')).toBe('Every 15 minutes');
    expect(words('15 * * * *')).toBe('Every hour at minute 15');
    expect(words('0,30 * * * *')).toBe('Every hour at minutes 0 and 30');
    expect(words('0 */6 * * *')).toBe('Every 6 hours at minute 0');
    expect(words('5 */1 * * *')).toBe('Every hour at minute 5');
  });

  it('gives a day its times, in order', () => {
    expect(words('00 03 * * *')).toBe('Every day at 03:00');
    expect(words('0 0,12 * * *')).toBe('Every day at 00:00 and 12:00');
    expect(words('30 18,6 * * *')).toBe('Every day at 06:30 and 18:30');
    expect(words('0,30 9 * * *')).toBe('Every day at 09:00 and 09:30');
  });

  it('names the days of the week, Sunday as 0, 7 or SUN', () => {
    expect(words('0 4 * * 0')).toBe('Every Sunday at 04:00');
    expect(words('0 4 * * 7')).toBe('Every Sunday at 04:00');
    expect(words('0 4 * * sun')).toBe('Every Sunday at 04:00');
    expect(words('0 4 * * MON')).toBe('Every Monday at 04:00');
    expect(words('0 4 * * 1,3,5')).toBe('Every Monday, Wednesday and Friday at 04:00');
    expect(words('0 4 * * 0,1')).toBe('Every Monday and Sunday at 04:00');
    expect(words('0 4 * * 6,0')).toBe('Every Saturday and Sunday at 04:00');
    expect(words('0 4 * * 1-5')).toBe('Every weekday at 04:00');
    expect(words('0 4 * * MON-FRI')).toBe('Every weekday at 04:00');
    expect(words('0 4 * * 2-4')).toBe('Every day from Tuesday to Thursday at 04:00');
    expect(words('0 4 * * 5-7')).toBe('Every day from Friday to Sunday at 04:00');
    expect(words('0 4 * * 0-6')).toBe('Every day at 04:00');
    expect(words('0 4 * * 0,1,2,3,4,5,6')).toBe('Every day at 04:00');
  });

  it('names the days of the month and of the year', () => {
    expect(words('0 2 1 * *')).toBe('Every month on the 1st at 02:00');
    expect(words('0 2 1,15 * *')).toBe('Every month on the 1st and 15th at 02:00');
    expect(words('0 2 22 * *')).toBe('Every month on the 22nd at 02:00');
    expect(words('0 2 11 * *')).toBe('Every month on the 11th at 02:00');
    expect(words('0 2 L * *')).toBe('Every month on its last day at 02:00');
    expect(words('0 2 1 1 *')).toBe('Every year on 1 January at 02:00');
    expect(words('0 2 24 DEC *')).toBe('Every year on 24 December at 02:00');
  });

  it('falls back to the expression for anything else', () => {
    for (const expression of [
      '0 3 1 * 1', // day of month OR day of week
      '5-10 * * * *',
      '0 9-17 * * *',
      '*/5 3 * * *',
      '0 */6 * * 1',
      '* 3 * * *',
      '0 3 */2 * *',
      '0 3 * 1 *',
      '0 3 * * 5-1',
      '0 3 * * 1/2',
      '60 3 * * *',
      '0 24 * * *',
      '0 3 32 * *',
      '0 0,3,6,9,12,15,18 * * *',
      'x 3 * * *',
      '0 3 * * 8',
    ])
      expect(cronWords(fields(expression)), expression).toBeNull();
    expect(words('0 9-17 * * 1-5')).toBe('0 9-17 * * 1-5');
    expect(cronExpression(fields('0 9-17 * * 1-5'))).toBe('0 9-17 * * 1-5');
  });
});

describe('presetOf', () => {
  it('knows a preset by its fields', () => {
    expect(presetOf(fields('0 3 * * *'))).toBe('nightly');
    expect(presetOf(fields('0 * * * *'))).toBe('hourly');
    expect(presetOf(fields('30 4 * * 1'))).toBe('weekly');
    expect(presetOf(fields('0 4 * * 1'))).toBeNull();
  });
});

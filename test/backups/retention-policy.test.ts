/**
 * The retention policy alone: dated backups in, the kept set (with reasons) and the removed set
 * out, checked against the examples of restic's documentation for `forget` and against its rules
 * one by one.
 */
import { describe, expect, it } from 'vitest';
import {
  applyRetention,
  calendarOf,
  isoWeek,
  NO_POLICY,
  type RetentionPolicy,
} from '../../src/backups/retention-policy.ts';

const policy = (rules: Partial<RetentionPolicy>): RetentionPolicy => ({ ...NO_POLICY, ...rules });

/** Backups named by their time (`2019-09-01 11:00`), made at that time, UTC. */
function dated(...times: string[]) {
  return times.map((time) => ({ id: time, createdAt: `${time.replace(' ', 'T')}:00.000Z` }));
}

const kept = (decision: ReturnType<typeof applyRetention>) => decision.keep.map((k) => k.backup.id);
const removed = (decision: ReturnType<typeof applyRetention>) => decision.remove.map((b) => b.id);

/** Every day from `from` for `days` days, at `hour`:00 UTC. */
function daily(from: string, days: number, hour = '03') {
  const start = Date.parse(`${from}T${hour}:00:00.000Z`);
  return Array.from({ length: days }, (_, i) => {
    const at = new Date(start + i * 86_400_000).toISOString();
    return { id: at, createdAt: at };
  });
}

describe("restic's documented examples", () => {
  // "Suppose you have only made one backup every Sunday for 12 weeks"
  const sundays = dated(
    '2019-09-01 11:00',
    '2019-09-08 11:00',
    '2019-09-15 11:00',
    '2019-09-22 11:00',
    '2019-09-29 11:00',
    '2019-10-06 11:00',
    '2019-10-13 11:00',
    '2019-10-20 11:00',
    '2019-10-27 11:00',
    '2019-11-03 11:00',
    '2019-11-10 11:00',
    '2019-11-17 11:00',
  );

  it('--keep-daily 4 keeps the last four Sundays and removes the other eight', () => {
    const decision = applyRetention(sundays, policy({ daily: 4 }));
    expect(kept(decision)).toEqual([
      '2019-11-17 11:00',
      '2019-11-10 11:00',
      '2019-11-03 11:00',
      '2019-10-27 11:00',
    ]);
    expect(decision.keep.map((k) => k.reasons)).toEqual([
      ['daily 2019-11-17'],
      ['daily 2019-11-10'],
      ['daily 2019-11-03'],
      ['daily 2019-10-27'],
    ]);
    expect(removed(decision)).toEqual(
      sundays
        .slice(0, 8)
        .map((b) => b.id)
        .reverse(),
    );
  });

  it('a backup every day for 100 years, daily 7 weekly 5 monthly 12 yearly 75', () => {
    // Ending on Sunday 2025-11-16, so that the newest is also its week's last day.
    const backups = daily('1925-11-17', 36_525);
    const decision = applyRetention(backups, policy({ daily: 7, weekly: 5, monthly: 12, yearly: 75 }));
    const by = (rule: string) => decision.keep.filter((k) => k.reasons.some((r) => r.startsWith(rule)));
    /** Kept by `rule` and by none of the rules before it: what `rule` adds, as the documentation counts. */
    const added = (rule: string, before: string[]) =>
      by(rule).filter((k) => !k.reasons.some((r) => before.some((b) => r.startsWith(b))));
    expect(by('daily ')).toHaveLength(7);
    expect(by('weekly ')).toHaveLength(5);
    expect(by('monthly ')).toHaveLength(12);
    expect(by('yearly ')).toHaveLength(75);
    // "the most recent 7 daily snapshots and 4 last-day-of-the-week ones (since the 7 dailies
    // already include 1 weekly)"
    expect(added('weekly ', ['daily '])).toHaveLength(4);
    // "Additionally, 12 or 11 last-day-of-the-month snapshots will be kept (depending on whether
    // one of them ends up being the same as a daily or weekly)": here the newest is one of them.
    expect(added('monthly ', ['daily ', 'weekly '])).toHaveLength(11);
    // "75 or 74 last-day-of-the-year snapshots are kept, depending on whether one of them ends up
    // being the same as an already kept snapshot": 73, as two of them are (the newest, a daily;
    // 2024-12-31, the twelfth monthly), which the documentation's count leaves out.
    const yearly = added('yearly ', ['daily ', 'weekly ', 'monthly ']);
    expect(yearly).toHaveLength(73);
    expect(decision.keep).toHaveLength(7 + 4 + 11 + 73);
    expect(decision.keep.length + decision.remove.length).toBe(backups.length);
    // Each weekly, monthly and yearly keeper is the last day of its week, month or year.
    for (const k of added('weekly ', ['daily '])) expect(new Date(k.backup.createdAt).getUTCDay()).toBe(0);
    for (const k of added('monthly ', ['daily '])) {
      const next = new Date(Date.parse(k.backup.createdAt) + 86_400_000);
      expect(next.getUTCDate()).toBe(1);
    }
    for (const k of yearly) expect(k.backup.createdAt.slice(5, 10)).toBe('12-31');
  });
});

describe('each rule', () => {
  const backups = dated(
    '2026-11-20 14:05',
    '2026-11-20 14:40', // newest of 14:00
    '2026-11-20 15:10', // newest of 15:00 and of the 20th
    '2026-11-21 09:00',
    '2026-11-21 23:59', // newest of the 21st, of week 47 (Mon 16 – Sun 22)
    '2026-11-23 00:00', // Monday: week 48
    '2026-12-01 08:00', // December
    '2027-01-02 12:00', // a new year; Saturday of ISO week 2026-W53
  );

  it.each<[string, Partial<RetentionPolicy>, string[]]>([
    ['last 3: the three newest', { last: 3 }, ['2027-01-02 12:00', '2026-12-01 08:00', '2026-11-23 00:00']],
    [
      'hourly 4: the newest of each of the four latest hours that have one',
      { hourly: 4 },
      ['2027-01-02 12:00', '2026-12-01 08:00', '2026-11-23 00:00', '2026-11-21 23:59'],
    ],
    [
      'daily 4',
      { daily: 4 },
      ['2027-01-02 12:00', '2026-12-01 08:00', '2026-11-23 00:00', '2026-11-21 23:59'],
    ],
    [
      'weekly 3: ISO weeks, Monday to Sunday',
      { weekly: 3 },
      ['2027-01-02 12:00', '2026-12-01 08:00', '2026-11-23 00:00'],
    ],
    ['monthly 2', { monthly: 2 }, ['2027-01-02 12:00', '2026-12-01 08:00']],
    ['yearly 1', { yearly: 1 }, ['2027-01-02 12:00']],
    ['yearly 2: the newest of 2026 is December’s', { yearly: 2 }, ['2027-01-02 12:00', '2026-12-01 08:00']],
  ])('%s', (_, rules, expected) => {
    expect(kept(applyRetention(backups, policy(rules)))).toEqual(expected);
  });

  it('hours within one day: the newest of each hour', () => {
    const sameDay = dated('2026-11-20 14:05', '2026-11-20 14:40', '2026-11-20 15:10', '2026-11-20 15:20');
    const decision = applyRetention(sameDay, policy({ hourly: 2 }));
    expect(kept(decision)).toEqual(['2026-11-20 15:20', '2026-11-20 14:40']);
    expect(decision.keep.map((k) => k.reasons)).toEqual([
      ['hourly 2026-11-20 15:00'],
      ['hourly 2026-11-20 14:00'],
    ]);
  });

  it('a backup kept by several rules is kept once, with every reason', () => {
    const decision = applyRetention(backups, policy({ last: 1, daily: 2, weekly: 1, monthly: 1, yearly: 1 }));
    expect(decision.keep[0]).toEqual({
      backup: backups[7],
      reasons: ['last 1', 'daily 2027-01-02', 'weekly 2026-W53', 'monthly 2027-01', 'yearly 2027'],
    });
    expect(kept(decision)).toEqual(['2027-01-02 12:00', '2026-12-01 08:00']);
  });

  it('rules are ORed: a backup only needs one', () => {
    const decision = applyRetention(backups, policy({ last: 1, monthly: 3 }));
    expect(kept(decision)).toEqual(['2027-01-02 12:00', '2026-12-01 08:00', '2026-11-23 00:00']);
  });

  it('a rule with counts left keeps the oldest backup too (restic 0.17)', () => {
    const decision = applyRetention(backups, policy({ monthly: 12 }));
    expect(decision.keep.map((k) => [k.backup.id, k.reasons])).toEqual([
      ['2027-01-02 12:00', ['monthly 2027-01']],
      ['2026-12-01 08:00', ['monthly 2026-12']],
      ['2026-11-23 00:00', ['monthly 2026-11']],
      ['2026-11-20 14:05', ['oldest monthly 2026-11']],
    ]);
  });

  it('a policy with no rule (nulls or zeros) keeps everything, as restic refuses an empty policy', () => {
    expect(removed(applyRetention(backups, NO_POLICY))).toEqual([]);
    expect(removed(applyRetention(backups, policy({ last: 0, daily: 0 })))).toEqual([]);
  });

  it('takes the backups newest first whatever order they come in', () => {
    const shuffled = [...backups].reverse();
    expect(kept(applyRetention(shuffled, policy({ last: 2 })))).toEqual([
      '2027-01-02 12:00',
      '2026-12-01 08:00',
    ]);
  });
});

describe('calendars', () => {
  it('ISO weeks: week 1 holds the first Thursday', () => {
    expect(isoWeek(2026, 11, 20)).toEqual({ year: 2026, week: 47 });
    expect(isoWeek(2027, 1, 3)).toEqual({ year: 2026, week: 53 });
    expect(isoWeek(2027, 1, 4)).toEqual({ year: 2027, week: 1 });
    expect(isoWeek(2024, 12, 30)).toEqual({ year: 2025, week: 1 });
  });

  it('periods follow the time zone', () => {
    const moment = new Date('2026-11-20T23:30:00.000Z');
    expect(calendarOf('UTC')(moment).daily).toBe('2026-11-20');
    expect(calendarOf('Europe/Paris')(moment)).toEqual({
      hourly: '2026-11-21 00:00',
      daily: '2026-11-21',
      weekly: '2026-W47',
      monthly: '2026-11',
      yearly: '2026',
    });
    expect(calendarOf('America/New_York')(moment).daily).toBe('2026-11-20');
  });

  it('two backups of one UTC day fall on two days in another zone', () => {
    const backups = dated('2026-11-20 10:00', '2026-11-20 23:30');
    expect(kept(applyRetention(backups, policy({ daily: 2 }), 'UTC'))).toEqual([
      '2026-11-20 23:30',
      '2026-11-20 10:00',
    ]);
    // In Tokyo (UTC+9) they are the 20th at 19:00 and the 21st at 08:30: still two days.
    expect(kept(applyRetention(backups, policy({ daily: 1 }), 'Asia/Tokyo'))).toEqual(['2026-11-20 23:30']);
    // In Los Angeles (UTC-8) both are on the 20th: daily 2 keeps the newest, and the oldest with a count left.
    const la = applyRetention(backups, policy({ daily: 2 }), 'America/Los_Angeles');
    expect(la.keep.map((k) => k.reasons)).toEqual([['daily 2026-11-20'], ['oldest daily 2026-11-20']]);
  });
});

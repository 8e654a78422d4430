/**
 * Cron expressions are read in AERIE_TIMEZONE, and the API gives `next_run_at` in UTC: across the
 * days the clocks change in Europe/Berlin (the last Sunday of March and of October; in 2027 the
 * 28th of March and the 31st of October), a daily 09:00 stays 09:00 on the wall, a 02:30 that
 * does not exist runs once at 03:00, and a 02:30 that happens twice runs once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';
import { backupTask, scheduleBody, scheduleOf, schedulesClient, taskOf } from './schedules-support.ts';

describe('AERIE_TIMEZONE', () => {
  it('defaults to UTC, takes IANA names, and refuses anything else', () => {
    expect(loadConfig({}).schedules.timezone).toBe('UTC');
    expect(loadConfig({ AERIE_TIMEZONE: 'Europe/Berlin' }).schedules.timezone).toBe('Europe/Berlin');
    expect(loadConfig({ AERIE_TIMEZONE: ' america/new_york ' }).schedules.timezone).toBe('America/New_York');
    for (const bad of ['Mars/Olympus', '+01:00', 'UTC+1', 'Europe/Berlin; DROP', '../etc/localtime']) {
      expect(() => loadConfig({ AERIE_TIMEZONE: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ AERIE_TIMEZONE: bad }), bad).toThrow(
        /AERIE_TIMEZONE must be an IANA time zone/,
      );
    }
  });
});

describe.each([
  ['Europe/Berlin', true],
  ['UTC', false],
])('next_run_at with AERIE_TIMEZONE=%s', (timezone, berlin) => {
  let app: TestApp;
  const clock = new ManualClock('2027-03-26T12:00:00.000Z');
  beforeAll(async () => {
    app = await startTestApp({ clock: clock.clock, env: { AERIE_TIMEZONE: timezone } });
  });
  afterAll(async () => app.close());

  async function client() {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    return schedulesClient(app, token, server.identifier);
  }

  /** When `cron` next runs after `now`, as the API answers a new schedule. */
  async function nextAt(now: string, cron: Record<string, string>): Promise<string | null> {
    clock.set(now);
    return scheduleOf(await (await client()).create(scheduleBody(cron))).next_run_at;
  }

  const daily9 = { minute: '0', hour: '9' };
  const daily0230 = { minute: '30', hour: '2' };

  it('keeps a daily 09:00 at 09:00 on the wall across the change to summer time and back', async () => {
    expect(await nextAt('2027-03-26T12:00:00.000Z', daily9)).toBe(
      berlin ? '2027-03-27T08:00:00+00:00' : '2027-03-27T09:00:00+00:00',
    );
    expect(await nextAt('2027-03-27T12:00:00.000Z', daily9)).toBe(
      berlin ? '2027-03-28T07:00:00+00:00' : '2027-03-28T09:00:00+00:00',
    );
    expect(await nextAt('2027-10-30T12:00:00.000Z', daily9)).toBe(
      berlin ? '2027-10-31T08:00:00+00:00' : '2027-10-31T09:00:00+00:00',
    );
  });

  it('runs a 02:30 that the clocks skip once, at 03:00, and one that they repeat once', async () => {
    expect(await nextAt('2027-03-27T12:00:00.000Z', daily0230)).toBe(
      berlin ? '2027-03-28T01:00:00+00:00' : '2027-03-28T02:30:00+00:00',
    );
    expect(await nextAt('2027-10-30T12:00:00.000Z', daily0230)).toBe(
      berlin ? '2027-10-31T00:30:00+00:00' : '2027-10-31T02:30:00+00:00',
    );
    // Once that day: after the first 02:30, the next is the next day's.
    expect(await nextAt('2027-10-31T00:31:00.000Z', daily0230)).toBe(
      berlin ? '2027-11-01T01:30:00+00:00' : '2027-10-31T02:30:00+00:00',
    );
  });

  it('moves next_run_at across the change as the tick runs the schedule', async () => {
    const api = await client();
    clock.set('2027-03-26T12:00:00.000Z');
    const schedule = scheduleOf(await api.create(scheduleBody(daily9)));
    taskOf(await api.createTask(schedule.id, backupTask()));
    const runs: string[] = [];
    for (let day = 0; day < 3; day++) {
      const due = scheduleOf(await api.get(schedule.id)).next_run_at!;
      clock.set(due.replace('+00:00', '.000Z'));
      expect((await app.services.scheduleRuns.tick()).started).toEqual([schedule.id]);
      await drainJobs(app);
      runs.push(due);
    }
    expect(runs).toEqual(
      berlin
        ? ['2027-03-27T08:00:00+00:00', '2027-03-28T07:00:00+00:00', '2027-03-29T07:00:00+00:00']
        : ['2027-03-27T09:00:00+00:00', '2027-03-28T09:00:00+00:00', '2027-03-29T09:00:00+00:00'],
    );
  });
});

/**
 * Retention policies through the API: read and set (`…/backups/retention`), previewed
 * (`…/retention/preview`), and applied after each successful automatic backup, to automatic
 * successful backups only: never a locked one, never one made by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backup } from '../../src/backups/backup.ts';
import {
  backupRows,
  scheduledBackup,
  serverActivity,
  serverWithLimit,
} from '../support/automatic-backups.ts';
import { BACKUP_FORMATS, formatEnv, isStored } from '../support/backup-formats.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';

const manual = new ManualClock('2026-11-16T00:00:00.000Z');

interface PolicyResource {
  object: string;
  attributes: Record<string, number | string | null>;
}

interface PreviewEntry {
  uuid: string;
  name: string;
  created_at: string;
  is_automatic: boolean;
  is_locked: boolean;
  reasons: string[];
}

interface Preview {
  object: string;
  attributes: { time_zone: string; keep: PreviewEntry[]; delete: PreviewEntry[] } & Record<string, unknown>;
}

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ clock: manual.clock });
});
afterAll(async () => app.close());

async function setup(limit = 50, on: TestApp = app) {
  const made = await serverWithLimit(on, limit);
  const json = { ...bearer(made.token), 'content-type': 'application/json' };
  const put = (payload: unknown) =>
    on.http.inject({
      method: 'PUT',
      url: `${made.base}/retention`,
      headers: json,
      payload: JSON.stringify(payload),
    });
  const preview = async (query = '') =>
    (
      await on.http.inject({
        method: 'GET',
        url: `${made.base}/retention/preview${query}`,
        headers: bearer(made.token),
      })
    ).json<Preview>().attributes;
  return { ...made, put, preview };
}

/** A schedule's backup made (and run) at `iso`. */
async function scheduledAt(serverId: string, iso: string, on: TestApp = app) {
  manual.set(iso);
  return scheduledBackup(on, serverId);
}

/** A backup made by hand through the API at `iso`, and run. */
async function byHandAt(
  base: string,
  token: string,
  iso: string,
  locked = false,
  on: TestApp = app,
): Promise<string> {
  manual.set(iso);
  const res = await on.http.inject({
    method: 'POST',
    url: base,
    headers: bearer(token),
    payload: { name: `by hand ${iso}`, is_locked: locked },
  });
  expect(res.statusCode, res.body).toBe(200);
  await drainJobs(on);
  return res.json<{ attributes: { uuid: string } }>().attributes.uuid;
}

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

describe('the policy', () => {
  it('is empty until set: every rule null, no update time, the zone the periods are counted in', async () => {
    const { base, token } = await setup();
    const res = await app.http.inject({ method: 'GET', url: `${base}/retention`, headers: bearer(token) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'backup_retention_policy',
      attributes: {
        keep_last: null,
        keep_hourly: null,
        keep_daily: null,
        keep_weekly: null,
        keep_monthly: null,
        keep_yearly: null,
        time_zone: 'UTC',
        updated_at: null,
      },
    });
  });

  it('is set as a whole (absent rules are off), read back, and the change is recorded', async () => {
    const { server, base, token, owner, put } = await setup();
    const res = await put({ keep_last: 2, keep_daily: 7, keep_weekly: null });
    expect(res.statusCode, res.body).toBe(200);
    const expected = {
      object: 'backup_retention_policy',
      attributes: {
        keep_last: 2,
        keep_hourly: null,
        keep_daily: 7,
        keep_weekly: null,
        keep_monthly: null,
        keep_yearly: null,
        time_zone: 'UTC',
        updated_at: '2026-11-16T00:00:00+00:00',
      },
    };
    expect(res.json<PolicyResource>()).toEqual(expected);
    const read = await app.http.inject({ method: 'GET', url: `${base}/retention`, headers: bearer(token) });
    expect(read.json()).toEqual(expected);

    const recorded = (await serverActivity(app, server.id)).at(-1);
    expect(recorded).toEqual({
      event: 'server:backup.retention.update',
      actorId: owner.id,
      batch: expect.any(String) as unknown,
      properties: {
        keep_last: 2,
        keep_hourly: null,
        keep_daily: 7,
        keep_weekly: null,
        keep_monthly: null,
        keep_yearly: null,
      },
    });
    const feed = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${server.identifier}/activity`,
      headers: bearer(token),
    });
    expect(
      feed.json<{ data: { attributes: { description: string } }[] }>().data[0]?.attributes.description,
    ).toBe('Set the backup retention policy to keep last 2, daily 7');

    // All null: no policy any more.
    const cleared = await put({});
    expect(cleared.json<PolicyResource>().attributes).toMatchObject({ keep_last: null, keep_daily: null });
  });

  it.each<[string, unknown, Record<string, string>]>([
    ['a negative count', { keep_daily: -1 }, { keep_daily: 'integer' }],
    ['a fraction', { keep_hourly: 1.5 }, { keep_hourly: 'integer' }],
    ['a number in a string', { keep_last: '3' }, { keep_last: 'integer' }],
    ['a count beyond 10000', { keep_yearly: 10_001 }, { keep_yearly: 'integer' }],
    [
      'two bad rules',
      { keep_weekly: -2, keep_monthly: true },
      { keep_weekly: 'integer', keep_monthly: 'integer' },
    ],
  ])('refuses %s in the validation envelope, changing nothing', async (_, payload, fields) => {
    const { put, base, token } = await setup();
    const res = await put(payload);
    expectValidation(res, fields);
    const field = Object.keys(fields)[0]!;
    expect(res.json<{ errors: { meta: { message: string } }[] }>().errors[0]?.meta.message).toBe(
      `The ${field} field must be a whole number from 0 to 10000, or null.`,
    );
    const read = await app.http.inject({ method: 'GET', url: `${base}/retention`, headers: bearer(token) });
    expect(read.json<PolicyResource>().attributes.updated_at).toBeNull();
  });

  it('needs backup.delete, for reading, setting and previewing', async () => {
    const { server, base } = await setup();
    const reader = await createUser(app);
    await addSubuser(app, server.id, reader, ['backup.read', 'backup.create']);
    const { token } = await createApiKey(app, reader);
    for (const [method, url] of [
      ['GET', `${base}/retention`],
      ['PUT', `${base}/retention`],
      ['GET', `${base}/retention/preview`],
    ] as const) {
      const res = await app.http.inject({ method, url, headers: bearer(token), payload: { keep_last: 1 } });
      expectError(res, 403, 'AccessDeniedHttpException', 'This action is unauthorized.');
    }
    const deleter = await createUser(app);
    await addSubuser(app, server.id, deleter, ['backup.delete']);
    const allowed = await createApiKey(app, deleter);
    const res = await app.http.inject({
      method: 'PUT',
      url: `${base}/retention`,
      headers: bearer(allowed.token),
      payload: { keep_last: 1 },
    });
    expect(res.statusCode).toBe(200);
    // Another user's server is not found, whatever the permission.
    const stranger = await createApiKey(app, await createUser(app));
    const hidden = await app.http.inject({
      method: 'GET',
      url: `${base}/retention`,
      headers: bearer(stranger.token),
    });
    expect(hidden.statusCode).toBe(404);
  });
});

describe('the preview', () => {
  it('says what would be kept and why, and what deleted, changing nothing', async () => {
    const { server, base, token, put, preview } = await setup();
    const handMade = await byHandAt(base, token, '2026-11-16T08:00:00.000Z');
    const a = await scheduledAt(server.id, '2026-11-16T09:00:00.000Z');
    const b = await scheduledAt(server.id, '2026-11-16T21:00:00.000Z');
    const c = await scheduledAt(server.id, '2026-11-17T09:00:00.000Z');
    const d = await scheduledAt(server.id, '2026-11-18T09:00:00.000Z');
    await app.http.inject({ method: 'POST', url: `${base}/${a.id}/lock`, headers: bearer(token) });

    // No policy: everything kept.
    let shown = await preview();
    expect(shown.delete).toEqual([]);
    expect(shown.keep.map((k) => k.reasons)).toEqual([
      ['no policy'],
      ['no policy'],
      ['no policy'],
      ['no policy', 'locked'],
      ['made by hand'],
    ]);

    expect((await put({ keep_last: 1, keep_daily: 2 })).statusCode).toBe(200);
    shown = await preview();
    expect(shown.time_zone).toBe('UTC');
    expect(shown.keep_last).toBe(1);
    expect(shown.keep.map((k) => [k.uuid, k.reasons])).toEqual([
      [d.id, ['last 1', 'daily 2026-11-18']],
      [c.id, ['daily 2026-11-17']],
      [a.id, ['locked']],
      [handMade, ['made by hand']],
    ]);
    expect(shown.delete.map((e) => [e.uuid, e.is_automatic, e.reasons])).toEqual([[b.id, true, []]]);
    expect(shown.keep[0]).toMatchObject({
      created_at: '2026-11-18T09:00:00+00:00',
      is_automatic: true,
      is_locked: false,
    });

    // A policy not saved yet, from the query: the saved one is left as it is.
    shown = await preview('?keep_daily=3');
    expect(shown.keep_last).toBeNull();
    expect(shown.keep.map((k) => [k.uuid, k.reasons])).toEqual([
      [d.id, ['daily 2026-11-18']],
      [c.id, ['daily 2026-11-17']],
      [b.id, ['daily 2026-11-16']],
      [a.id, ['locked']],
      [handMade, ['made by hand']],
    ]);
    const bad = await app.http.inject({
      method: 'GET',
      url: `${base}/retention/preview?keep_daily=-1`,
      headers: bearer(token),
    });
    expectValidation(bad, { keep_daily: 'min' });

    // Nothing was deleted by looking.
    expect(await backupRows(app, server.id)).toHaveLength(5);
  });
});

describe.each(BACKUP_FORMATS)('applied after a successful automatic %s backup', (format) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ clock: manual.clock, env: formatEnv(format) });
  });
  afterAll(async () => app.close());

  it('keep_last 2: automatic backups beyond the two newest go; hand-made and locked ones stay', async () => {
    const { server, base, token, put } = await setup(50, app);
    const handMade = await byHandAt(base, token, '2026-11-16T01:00:00.000Z', false, app);
    const lockedByHand = await byHandAt(base, token, '2026-11-16T01:30:00.000Z', true, app);
    const first = await scheduledAt(server.id, '2026-11-16T02:00:00.000Z', app);
    await app.http.inject({ method: 'POST', url: `${base}/${first.id}/lock`, headers: bearer(token) });
    const second = await scheduledAt(server.id, '2026-11-16T03:00:00.000Z', app);
    const third = await scheduledAt(server.id, '2026-11-16T04:00:00.000Z', app);
    // No policy yet: nothing deleted.
    expect(await backupRows(app, server.id)).toHaveLength(5);

    expect((await put({ keep_last: 2 })).statusCode).toBe(200);
    // A backup made by hand does not apply the policy.
    const laterByHand = await byHandAt(base, token, '2026-11-16T04:30:00.000Z', false, app);
    expect(await backupRows(app, server.id)).toHaveLength(6);

    const fourth = await scheduledAt(server.id, '2026-11-16T05:00:00.000Z', app);
    // The two newest automatic ones are the fourth and the third; the first is locked.
    expect(ids(await backupRows(app, server.id))).toEqual([
      handMade,
      lockedByHand,
      first.id,
      third.id,
      laterByHand,
      fourth.id,
    ]);
    expect(isStored(app, server.id, second.id, format)).toBe(false);
    for (const kept of [handMade, lockedByHand, first.id, third.id, laterByHand, fourth.id])
      expect(isStored(app, server.id, kept, format)).toBe(true);

    // Recorded as a deletion by the policy, the system's, in the backup job's batch.
    const activity = await serverActivity(app, server.id);
    const deletion = activity.find((e) => e.event === 'server:backup.delete');
    expect(deletion).toEqual({
      event: 'server:backup.delete',
      actorId: null,
      batch: activity.at(-2)?.batch,
      properties: { name: second.name, retention: true },
    });
    expect(activity.at(-2)?.event).toBe('server:backup.complete');
    expect(activity.filter((e) => e.event === 'server:backup.delete')).toHaveLength(1);
    const feed = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${server.identifier}/activity?filter[event]=delete`,
      headers: bearer(token),
    });
    expect(
      feed.json<{ data: { attributes: { description: string } }[] }>().data[0]?.attributes.description,
    ).toBe(`Deleted backup ${second.name} by the retention policy`);
  });
});

describe('applied after a successful automatic backup', () => {
  it('daily and weekly: the newest of each day, and of each ISO week', async () => {
    const { server, put } = await setup();
    expect((await put({ keep_daily: 2, keep_weekly: 2 })).statusCode).toBe(200);
    // Week 47: Monday 16 – Sunday 22; week 48 from Monday 23.
    const made: Backup[] = [];
    for (const iso of [
      '2026-11-16T06:00:00.000Z', // week 47
      '2026-11-20T06:00:00.000Z', // week 47
      '2026-11-22T06:00:00.000Z', // Sunday: newest of week 47
      '2026-11-23T06:00:00.000Z', // week 48
      '2026-11-23T18:00:00.000Z', // newest of the 23rd
      '2026-11-24T06:00:00.000Z', // newest of the 24th and of week 48
    ]) {
      made.push(await scheduledAt(server.id, iso));
    }
    // Daily 2: the 24th and the 23rd's 18:00; weekly 2: week 48 (the 24th) and week 47 (the 22nd).
    expect(ids(await backupRows(app, server.id))).toEqual([made[2]!.id, made[4]!.id, made[5]!.id]);
  });

  it.each<[string, Record<string, number>, string[], number[]]>([
    [
      'hourly 2',
      { keep_hourly: 2 },
      ['2026-11-16T10:05:00.000Z', '2026-11-16T10:50:00.000Z', '2026-11-16T11:10:00.000Z'],
      [1, 2],
    ],
    [
      'monthly 2',
      { keep_monthly: 2 },
      [
        '2026-10-30T10:00:00.000Z',
        '2026-11-02T10:00:00.000Z',
        '2026-11-28T10:00:00.000Z',
        '2026-12-01T10:00:00.000Z',
      ],
      [2, 3],
    ],
    [
      'yearly 1',
      { keep_yearly: 1 },
      ['2026-12-30T10:00:00.000Z', '2027-01-02T10:00:00.000Z', '2027-03-01T10:00:00.000Z'],
      [2],
    ],
  ])('%s', async (_, policy, times, keptIndexes) => {
    const { server, put } = await setup();
    expect((await put(policy)).statusCode).toBe(200);
    const made: Backup[] = [];
    for (const iso of times) made.push(await scheduledAt(server.id, iso));
    expect(ids(await backupRows(app, server.id))).toEqual(keptIndexes.map((i) => made[i]!.id));
  });
});

describe('periods in AERIE_TIMEZONE', () => {
  it('counts days in the configured zone', async () => {
    const tokyo = await startTestApp({ clock: manual.clock, env: { AERIE_TIMEZONE: 'Asia/Tokyo' } });
    try {
      const { server, token, base } = await serverWithLimit(tokyo, 10);
      const make = async (iso: string) => {
        manual.set(iso);
        return scheduledBackup(tokyo, server.id);
      };
      // 10:00 and 20:00 UTC on the 16th: the 16th at 19:00 and the 17th at 05:00 in Tokyo.
      const early = await make('2026-11-16T10:00:00.000Z');
      const late = await make('2026-11-16T20:00:00.000Z');
      const preview = await tokyo.http.inject({
        method: 'GET',
        url: `${base}/retention/preview?keep_daily=5`,
        headers: bearer(token),
      });
      const shown = preview.json<Preview>().attributes;
      expect(shown.time_zone).toBe('Asia/Tokyo');
      expect(shown.keep.map((k) => [k.uuid, k.reasons])).toEqual([
        [late.id, ['daily 2026-11-17']],
        [early.id, ['daily 2026-11-16']],
      ]);
    } finally {
      await tokyo.close();
    }
  });
});

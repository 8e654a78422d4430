/**
 * The feed's filter columns on activity_log_subjects: a database made before they existed gets
 * them filled from activity_logs on upgrade, and the feed of its old entries reads the same as
 * before — on every engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository, type FeedFilter } from '../../src/activity/activity.repository.ts';
import type { Db } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import { migrateThrough } from '../support/migrations.ts';

const CASES = ALL_DIALECT_CASES;

const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';

/** Entries as the previous release wrote them: [event, ip, actor, subjects]. */
const OLD: [string, string | null, string | null, string[]][] = [
  ['auth:login', '10.0.0.1', ALICE, [ALICE]],
  ['user:api-key.create', '10.0.0.2', ALICE, [ALICE]],
  ['auth:fail', '192.168.1.1', null, [ALICE]],
  ['server:subuser.create', 'ABCD::1', BOB, [ALICE, BOB]],
  ['x:50%_off', null, ALICE, [ALICE]],
  ['auth:login', '10.0.0.9', BOB, [BOB]],
];

describe.each(CASES)('feed filter columns on $kind', ({ kind, url, available }) => {
  let db: Db;
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
  });
  afterAll(async () => {
    await database?.close();
  });

  it.runIf(available)('fills the copies of existing entries on upgrade; filters then read them', async () => {
    await migrateThrough(db, '2026_11_23_000000_user_numbers');
    const old = db.kysely as unknown as import('kysely').Kysely<Record<string, Record<string, unknown>>>;
    for (const [id, name] of [
      [ALICE, 'alice'],
      [BOB, 'bob'],
    ] as const) {
      const now = '2026-01-01T00:00:00.000Z';
      await old
        .insertInto('users')
        .values({
          id,
          username: name,
          email: `${name}@example.com`,
          password_hash: 'x',
          first_name: name,
          last_name: '',
          language: 'en',
          root_admin: 0,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
    for (const [i, [event, ip, actor, subjects]] of OLD.entries()) {
      const timestamp = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
      await old
        .insertInto('activity_logs')
        .values({
          id: i + 1,
          batch: ALICE,
          event,
          ip,
          actor_id: actor,
          api_key_id: null,
          properties: '{}',
          timestamp,
        })
        .execute();
      for (const subject of subjects) {
        await old
          .insertInto('activity_log_subjects')
          .values({ activity_log_id: i + 1, subject_type: 'user', subject_id: subject, timestamp })
          .execute();
      }
    }

    await migrateToLatest(db);

    const copies = await db.kysely
      .selectFrom('activity_log_subjects')
      .select(['activity_log_id', 'subject_id', 'event', 'ip', 'actor_id'])
      .orderBy('activity_log_id')
      .orderBy('subject_id')
      .execute();
    expect(copies.map((c) => [Number(c.activity_log_id), c.subject_id, c.event, c.ip, c.actor_id])).toEqual(
      OLD.flatMap(([event, ip, actor, subjects], i) => subjects.map((s) => [i + 1, s, event, ip, actor])),
    );

    const repository = new ActivityRepository(db.kysely, kind);
    const alice = (more: Partial<FeedFilter> = {}): FeedFilter => ({
      subject: { type: 'user', id: ALICE },
      viewer: { userId: ALICE, admin: false },
      ...more,
    });
    const ids = async (filter: FeedFilter) =>
      (await repository.page(filter, { descending: false, limit: 25, offset: 0 })).map((row) => row.id);
    expect(await repository.count(alice())).toBe(5);
    expect(await ids(alice({ event: 'AUTH' }))).toEqual([1, 3]);
    expect(await ids(alice({ event: '%_' }))).toEqual([5]);
    expect(await ids(alice({ ip: '10.0' }))).toEqual([1, 2]);
    expect(await ids(alice({ ip: 'abcd' }))).toEqual([]);
    expect(await ids(alice({ ip: 'abcd', viewer: { userId: ALICE, admin: true } }))).toEqual([4]);
    expect(await ids(alice({ actorId: null }))).toEqual([3]);
    expect(await ids(alice({ actorId: BOB }))).toEqual([4]);
    expect(await repository.page(alice(), { descending: true, limit: 2, offset: 1 })).toMatchObject([
      { id: 4, event: 'server:subuser.create', actor_username: 'bob' },
      { id: 3, event: 'auth:fail', actor_username: null },
    ]);
  });
});

/**
 * The kept feed counts: an unfiltered feed's total is read from activity_feed_counts, written in
 * the transaction of each entry and of each retention delete. Under concurrent writers and
 * batched deletes it must equal the true count of the feed's subjects rows, on every engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository, type FeedFilter, type Subject } from '../../src/activity/activity.repository.ts';
import type { Db } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';

const USERS = ['00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-0000000000b2'];
const SERVER = '00000000-0000-4000-8000-0000000000c3';

function feedOf(subject: Subject): FeedFilter {
  return { subject, viewer: { userId: USERS[0] ?? '', admin: true } };
}

describe.each(ALL_DIALECT_CASES)('feed counts on $kind', ({ kind, url, available }) => {
  let db: Db;
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
  let repository: ActivityRepository;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
    await migrateToLatest(db);
    repository = new ActivityRepository(db.kysely, kind);
  });
  afterAll(async () => {
    await database?.close();
  });

  /** The feed's true size, counted on its subjects rows. */
  async function counted(subject: Subject): Promise<number> {
    const row = await db.kysely
      .selectFrom('activity_log_subjects')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('subject_type', '=', subject.type)
      .where('subject_id', '=', subject.id)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  const feeds: Subject[] = [
    { type: 'user', id: USERS[0] ?? '' },
    { type: 'user', id: USERS[1] ?? '' },
    { type: 'server', id: SERVER },
  ];

  it.runIf(available)('a feed nobody wrote to counts 0', async () => {
    expect(await repository.count(feedOf({ type: 'user', id: 'nobody' }))).toBe(0);
  });

  it.runIf(available)('stays exact under concurrent writers, with subjects in any order', async () => {
    // Entries about one, two or three feeds at once, listed in different orders, 120 at a time:
    // on PostgreSQL and MariaDB these run on up to 10 connections together.
    const writes = Array.from({ length: 120 }, (_, i) => {
      const subjects = feeds.filter((_, f) => (i >> f) % 2 === 1 || f === i % 3);
      return repository.insert({
        batch: USERS[0] ?? '',
        event: `test:${i}`,
        ip: '10.0.0.1',
        actorId: null,
        apiKeyId: null,
        properties: {},
        timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        subjects: i % 2 === 0 ? subjects : [...subjects].reverse(),
      });
    });
    await Promise.all(writes);
    for (const feed of feeds) {
      const truth = await counted(feed);
      expect(truth).toBeGreaterThan(0);
      expect(await repository.count(feedOf(feed))).toBe(truth);
    }
  });

  it.runIf(available)('a filtered feed is counted on its rows, not the kept count', async () => {
    const feed = feeds[0] ?? feeds[1];
    if (feed === undefined) throw new Error('no feed');
    const total = await repository.count(feedOf(feed));
    expect(await repository.count({ ...feedOf(feed), event: 'test:1' })).toBeLessThan(total);
    expect(await repository.count({ ...feedOf(feed), actorId: null })).toBe(total);
  });

  it.runIf(available)('retention deletes in batches and takes the entries off their feeds', async () => {
    const cutoff = new Date(Date.UTC(2026, 0, 1, 0, 1, 0)).toISOString(); // the first 60 entries
    const batches: number[] = [];
    for (;;) {
      const deleted = await repository.deleteOlderThan(cutoff, 25);
      batches.push(deleted);
      if (deleted < 25) break;
    }
    expect(batches).toEqual([25, 25, 10]);
    const left = await db.kysely
      .selectFrom('activity_logs')
      .select((eb) => eb.fn.min('timestamp').as('oldest'))
      .executeTakeFirstOrThrow();
    expect(String(left.oldest) >= cutoff).toBe(true);
    for (const feed of feeds) {
      expect(await repository.count(feedOf(feed))).toBe(await counted(feed));
    }
    const orphans = await db.kysely
      .selectFrom('activity_log_subjects as s')
      .leftJoin('activity_logs as l', 'l.id', 's.activity_log_id')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('l.id', 'is', null)
      .executeTakeFirstOrThrow();
    expect(Number(orphans.n)).toBe(0);
  });
});

/**
 * Text compares exactly and holds what the API accepts, on every engine, in a database made by
 * the previous release and upgraded: identifiers and names match only in their own letter case,
 * accents and trailing spaces count, JSON columns hold far more than 64 KiB, and the 0/1 flags
 * still read back as 0 and 1.
 */
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository } from '../../src/activity/activity.repository.ts';
import type { Db } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import { migrateThrough } from '../support/migrations.ts';

const ALICE = '00000000-0000-4000-8000-00000000000a';
const SERVER = '00000000-0000-4000-8000-0000000000f1';
const BACKUP = '00000000-0000-4000-8000-0000000000b1';
const NOW = '2026-01-01T00:00:00.000Z';
const IDENTIFIER = 'ptlc_AbCdEfGhIjK';

/** A JSON array of strings of more than 64 KiB (TEXT's limit on MariaDB), with 4-byte characters. */
const LONG_JSON = JSON.stringify(Array.from({ length: 400 }, (_, i) => `${i}💥${'x'.repeat(300)}é`));

type Loose = Kysely<Record<string, Record<string, unknown>>>;

describe.each(ALL_DIALECT_CASES)('exact text on $kind', ({ kind, url, available }) => {
  let db: Db;
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
    // The schema as the previous release left it, with some rows in it.
    await migrateThrough(db, '2026_11_24_000000_feed_filter_columns');
    const old = db.kysely as unknown as Loose;
    await old
      .insertInto('users')
      .values({
        id: ALICE,
        username: 'alice',
        email: 'alice@example.com',
        password_hash: 'x',
        first_name: 'Alice',
        last_name: '',
        language: 'en',
        root_admin: 1,
        created_at: NOW,
        updated_at: NOW,
      })
      .execute();
    await old
      .insertInto('api_keys')
      .values({
        user_id: ALICE,
        identifier: IDENTIFIER,
        token_hash: 'ab'.repeat(32),
        description: 'old key',
        allowed_ips: '["10.0.0.1"]',
        created_at: NOW,
      })
      .execute();
    await old
      .insertInto('servers')
      .values({
        id: SERVER,
        identifier: 'AbCd1234',
        owner_id: ALICE,
        name: 'world',
        description: '',
        created_at: NOW,
        updated_at: NOW,
      })
      .execute();
    await old
      .insertInto('backups')
      .values({
        id: BACKUP,
        server_id: SERVER,
        name: 'nightly',
        ignored_files: '["*.log"]',
        disk: 'local',
        is_successful: 1,
        is_locked: 0,
        created_at: NOW,
      })
      .execute();
    await old
      .insertInto('activity_logs')
      .values({
        id: 1,
        batch: ALICE,
        event: 'user:api-key.create',
        actor_id: ALICE,
        properties: '{}',
        timestamp: NOW,
      })
      .execute();
    await old
      .insertInto('activity_log_subjects')
      .values({
        activity_log_id: 1,
        subject_type: 'user',
        subject_id: ALICE,
        timestamp: NOW,
        event: 'user:api-key.create',
        actor_id: ALICE,
      })
      .execute();

    await old
      .insertInto('activity_logs')
      .values({ id: 2, batch: ALICE, event: 'x:café', actor_id: ALICE, properties: '{}', timestamp: NOW })
      .execute();
    await old
      .insertInto('activity_log_subjects')
      .values({
        activity_log_id: 2,
        subject_type: 'user',
        subject_id: ALICE,
        timestamp: NOW,
        event: 'x:café',
        actor_id: ALICE,
      })
      .execute();

    await migrateToLatest(db);
  });
  afterAll(async () => {
    await database?.close();
  });

  it.runIf(available)('keeps the rows and their values across the upgrade', async () => {
    const row = await db.kysely.selectFrom('api_keys').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      identifier: IDENTIFIER,
      allowed_ips: '["10.0.0.1"]',
      description: 'old key',
    });
    const backup = await db.kysely.selectFrom('backups').selectAll().executeTakeFirstOrThrow();
    expect(backup).toMatchObject({ ignored_files: '["*.log"]', is_successful: 1, is_locked: 0 });
    const user = await db.kysely.selectFrom('users').select('root_admin').executeTakeFirstOrThrow();
    expect(user.root_admin).toBe(1);
  });

  it.runIf(available)(
    'matches identifiers and names only exactly: case, accents and trailing spaces count',
    async () => {
      const keys = (identifier: string) =>
        db.kysely.selectFrom('api_keys').select('identifier').where('identifier', '=', identifier).execute();
      expect(await keys(IDENTIFIER)).toHaveLength(1);
      for (const near of [
        IDENTIFIER.toLowerCase(),
        IDENTIFIER.toUpperCase(),
        `${IDENTIFIER} `,
        `${IDENTIFIER}\t`,
      ]) {
        expect(await keys(near), near).toEqual([]);
      }
      const servers = (identifier: string) =>
        db.kysely.selectFrom('servers').select('id').where('identifier', '=', identifier).execute();
      expect(await servers('AbCd1234')).toHaveLength(1);
      expect(await servers('abcd1234')).toEqual([]);
      const users = (username: string) =>
        db.kysely.selectFrom('users').select('id').where('username', '=', username).execute();
      expect(await users('ALICE')).toEqual([]);
      expect(await users('alicé')).toEqual([]);

      // Two keys whose identifiers differ only in case are two keys.
      await db.kysely
        .insertInto('api_keys')
        .values({
          user_id: ALICE,
          identifier: IDENTIFIER.toLowerCase(),
          token_hash: 'cd'.repeat(32),
          description: '',
          allowed_ips: '[]',
          created_at: NOW,
        })
        .execute();
      expect(await keys(IDENTIFIER.toLowerCase())).toHaveLength(1);
      expect(await keys(IDENTIFIER)).toHaveLength(1);
    },
  );

  it.runIf(available)('filters the feed in any case, but with accents exact', async () => {
    const repository = new ActivityRepository(db.kysely, kind);
    const count = (event: string) =>
      repository.count({
        subject: { type: 'user', id: ALICE },
        viewer: { userId: ALICE, admin: false },
        event,
      });
    expect(await count('API-KEY')).toBe(1);
    expect(await count('api-kéy')).toBe(0);
    expect(await count('API-KÉY')).toBe(0);
    // Same length in bytes, so only the collation tells them apart.
    expect(await count('cafè')).toBe(0);
    expect(await count('CAFÉ')).toBe(1);
    expect(await count('x:café')).toBe(1);
  });

  it.runIf(available)('holds JSON of more than 64 KiB in every JSON column', async () => {
    expect(Buffer.byteLength(LONG_JSON)).toBeGreaterThan(96 * 1024);
    await db.kysely.updateTable('backups').set({ ignored_files: LONG_JSON }).execute();
    await db.kysely.updateTable('api_keys').set({ allowed_ips: LONG_JSON }).execute();
    await db.kysely.updateTable('activity_logs').set({ properties: LONG_JSON }).execute();
    await db.kysely
      .insertInto('jobs')
      .values({
        kind: 'backup.create',
        payload: LONG_JSON,
        state: 'failed',
        batch: ALICE,
        attempts: 3,
        max_attempts: 3,
        run_at: NOW,
        error: LONG_JSON,
        created_at: NOW,
        updated_at: NOW,
      })
      .execute();
    expect(
      (await db.kysely.selectFrom('backups').select('ignored_files').executeTakeFirstOrThrow()).ignored_files,
    ).toBe(LONG_JSON);
    for (const { allowed_ips } of await db.kysely.selectFrom('api_keys').select('allowed_ips').execute()) {
      expect(allowed_ips).toBe(LONG_JSON);
    }
    expect(
      (await db.kysely.selectFrom('activity_logs').select('properties').executeTakeFirstOrThrow()).properties,
    ).toBe(LONG_JSON);
    const job = await db.kysely.selectFrom('jobs').select(['payload', 'error']).executeTakeFirstOrThrow();
    expect(job).toEqual({ payload: LONG_JSON, error: LONG_JSON });
  });
});

/**
 * PostgreSQL keeps flags as `boolean`, JSON as `json` and times as `timestamptz(3)`
 * (migration 2026_12_02_000000_postgres_types), and the application reads the same values as on
 * the other engines: flags 1 and 0, JSON as written, times as the ISO-8601 strings written.
 *
 * On every engine: values round-trip unchanged, JSON keeps its key order, and times order and
 * compare as before. On SQLite and MariaDB the migration changes nothing. On PostgreSQL: the
 * column types, values the database now refuses, indexes, defaults and constraints across the
 * upgrade, values written before the upgrade, values that stop it, and the way back down.
 */
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository } from '../../src/activity/activity.repository.ts';
import { isoTime, type Db } from '../../src/db/connection.ts';
import { nativeKind, portableKind, type SchemaColumn } from '../../src/db/column-types.ts';
import { knownMigrations, migrateToLatest, migrations, migratorFor } from '../../src/db/migrate.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import { migrateThrough } from '../support/migrations.ts';

const MIGRATION = '2026_12_02_000000_postgres_types';
const ALICE = '00000000-0000-4000-8000-00000000000a';
const SERVER = '00000000-0000-4000-8000-0000000000f1';
const T1 = '2026-11-22T03:49:51.123Z';
const T2 = '1999-12-31T23:59:59.999Z';
/** Keys out of alphabetical order, a duplicate key, spacing, a lone surrogate and a NUL, escaped. */
const ODD_JSON = '{"zeta": 1, "alpha":[2,{"y":null,"b":"\\ud800"}],"zeta" :"\\u0000"}';
const PROPERTIES = { zeta: 1, alpha: 'é', mid: { b: 2, a: 1 }, lone: '\ud800' };

type Loose = Kysely<Record<string, Record<string, unknown>>>;

/** The migration just before this one, whose schema the upgrade starts from. */
function previousMigration(db: Db): string {
  const names = knownMigrations(db);
  const previous = names[names.indexOf(MIGRATION) - 1];
  if (previous === undefined) throw new Error(`${MIGRATION} is not among the migrations`);
  return previous;
}

async function insertRows(db: Db, times: { created: string; lease: string }): Promise<void> {
  const loose = db.kysely as unknown as Loose;
  await loose
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
      created_at: times.created,
      updated_at: T2,
    })
    .execute();
  await loose
    .insertInto('servers')
    .values({
      id: SERVER,
      identifier: 'AbCd1234',
      owner_id: ALICE,
      name: 'w',
      description: '',
      created_at: T1,
      updated_at: T1,
    })
    .execute();
  await loose
    .insertInto('backups')
    .values({
      id: '00000000-0000-4000-8000-0000000000b1',
      server_id: SERVER,
      name: 'nightly',
      ignored_files: ODD_JSON,
      disk: 'local',
      is_successful: 1,
      is_locked: 0,
      created_at: T1,
      completed_at: null,
    })
    .execute();
  await loose.updateTable('maintenance_leases').set({ expires_at: times.lease }).execute();
}

describe('isoTime: timestamptz as PostgreSQL prints it, read as the ISO string the application wrote', () => {
  it.each([
    ['2026-11-22 03:49:51.123+00', T1],
    ['2026-11-22 03:49:51+00', '2026-11-22T03:49:51.000Z'],
    ['2026-11-22 03:49:51.1+00', '2026-11-22T03:49:51.100Z'],
    ['2026-11-22 03:49:51.123987+00', T1],
    ['2026-11-22 09:19:51.123+05:30', T1],
    ['2026-11-21 23:49:51.123-04', T1],
    ['1850-01-01 00:09:21+00:09:21', '1850-01-01T00:00:00.000Z'],
    ['0044-03-15 12:00:00+00 BC', '-000043-03-15T12:00:00.000Z'],
    ['-infinity', ''],
    ['infinity', 'infinity'],
  ])('%s → %s', (printed, iso) => {
    expect(isoTime(printed)).toBe(iso);
  });
});

describe.each(ALL_DIALECT_CASES)('typed columns on $kind', ({ kind, url, available }) => {
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;
  let db: Db;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
    await migrateToLatest(db);
    await insertRows(db, { created: T1, lease: T1 });
  });
  afterAll(async () => {
    await database?.close();
  });

  it.runIf(available)('reads flags as 1 and 0, JSON as written and times as written', async () => {
    const user = await db.kysely.selectFrom('users').selectAll().executeTakeFirstOrThrow();
    expect(user.root_admin).toBe(1);
    expect([user.created_at, user.updated_at]).toEqual([T1, T2]);
    const backup = await db.kysely.selectFrom('backups').selectAll().executeTakeFirstOrThrow();
    expect([backup.is_successful, backup.is_locked]).toEqual([1, 0]);
    expect(backup.ignored_files).toBe(ODD_JSON);
    expect([backup.created_at, backup.completed_at]).toEqual([T1, null]);

    await db.kysely.updateTable('backups').set({ is_locked: 1, completed_at: T2 }).execute();
    const updated = await db.kysely.selectFrom('backups').selectAll().executeTakeFirstOrThrow();
    expect([updated.is_locked, updated.completed_at]).toEqual([1, T2]);
    const locked = await db.kysely.selectFrom('backups').select('id').where('is_locked', '=', 1).execute();
    expect(locked).toHaveLength(1);
  });

  it.runIf(available)('keeps activity properties in the order written, through the repository', async () => {
    const activity = new ActivityRepository(db.kysely, kind);
    const subject = { type: 'user' as const, id: ALICE };
    for (const [i, timestamp] of [T2, T1].entries()) {
      await activity.insert({
        batch: ALICE,
        event: `test:${i}`,
        ip: null,
        actorId: ALICE,
        apiKeyId: null,
        properties: { ...PROPERTIES, i },
        timestamp,
        subjects: [subject],
      });
    }
    const page = await activity.page(
      { subject, viewer: { userId: ALICE, admin: false } },
      { descending: true, limit: 10, offset: 0 },
    );
    expect(page.map((row) => [row.timestamp, row.properties])).toEqual([
      [T1, JSON.stringify({ ...PROPERTIES, i: 1 })],
      [T2, JSON.stringify({ ...PROPERTIES, i: 0 })],
    ]);
    expect(Object.keys(JSON.parse(page[0]?.properties ?? '{}') as object)).toEqual([
      'zeta',
      'alpha',
      'mid',
      'lone',
      'i',
    ]);
  });

  it.runIf(available)('compares and orders times as the ISO strings did', async () => {
    const before = (time: string) =>
      db.kysely.selectFrom('users').select('id').where('created_at', '<', time).execute();
    expect(await before('2026-11-22T03:49:51.124Z')).toHaveLength(1);
    expect(await before(T1)).toHaveLength(0);
    const times = await db.kysely
      .selectFrom('activity_logs')
      .select('timestamp')
      .orderBy('timestamp')
      .execute();
    expect(times.map((row) => row.timestamp)).toEqual([T2, T1]);
  });

  it.runIf(available && kind !== 'postgres')('leaves the schema as it was on this engine', async () => {
    const other = await emptyDatabase({ kind, url, available });
    try {
      await migrateThrough(other.db, previousMigration(other.db));
      const columns = async () =>
        (await other.db.kysely.introspection.getTables()).map((t) => [
          t.name,
          t.columns.map((c) => [c.name, c.dataType]),
        ]);
      const before = await columns();
      // This migration alone: later ones add columns of their own.
      await migrateThrough(other.db, MIGRATION);
      expect(await columns()).toEqual(before);
    } finally {
      await other.close();
    }
  });
});

const POSTGRES = ALL_DIALECT_CASES.find((d) => d.kind === 'postgres');
if (POSTGRES === undefined) throw new Error('no PostgreSQL case');

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  character_maximum_length: number | null;
  datetime_precision: number | null;
  is_nullable: string;
  column_default: string | null;
  comment: string | null;
}

/** Each table's columns, indexes and constraints, as PostgreSQL describes them. */
async function schema(db: Db) {
  const columns = await sql<ColumnRow>`select table_name, column_name, data_type, character_maximum_length,
      datetime_precision, is_nullable, column_default,
      col_description(format('%I.%I', table_schema, table_name)::regclass, ordinal_position) as comment
    from information_schema.columns where table_schema = current_schema() order by 1, 2`.execute(db.kysely);
  const indexes = await sql`select tablename, indexname, indexdef from pg_indexes
    where schemaname = current_schema() order by 1, 2`.execute(db.kysely);
  const constraints = await sql`select conrelid::regclass::text as on_table, conname,
      pg_get_constraintdef(oid) as def
    from pg_constraint where connamespace = current_schema()::regnamespace order by 1, 2`.execute(db.kysely);
  return { columns: columns.rows, indexes: indexes.rows, constraints: constraints.rows };
}

function schemaColumn(row: ColumnRow): SchemaColumn {
  return {
    table: row.table_name,
    column: row.column_name,
    dataType: row.data_type,
    maxLength: row.character_maximum_length,
  };
}

/** Every column of one of PostgreSQL's own types, as `table.column:kind`. */
function natives(columns: ColumnRow[]): string[] {
  return columns.flatMap((row) => {
    const kind = nativeKind(schemaColumn(row));
    return kind === undefined ? [] : [`${row.table_name}.${row.column_name}:${kind}`];
  });
}

const FLAGS = ['users.root_admin', 'backups.is_successful', 'backups.is_locked'];
const JSONS = [
  'activity_logs.properties',
  'api_keys.allowed_ips',
  'backups.ignored_files',
  'jobs.payload',
  'subusers.permissions',
];
const TIMES = [
  'activity_logs.timestamp',
  'activity_log_subjects.timestamp',
  'api_keys.created_at',
  'api_keys.last_used_at',
  'backups.created_at',
  'backups.completed_at',
  'backups.progress_started_at',
  'backups.progress_updated_at',
  'jobs.run_at',
  'jobs.lease_expires_at',
  'jobs.created_at',
  'jobs.updated_at',
  'jobs.finished_at',
  'login_checkpoints.created_at',
  'login_checkpoints.expires_at',
  'maintenance_leases.expires_at',
  'recovery_tokens.created_at',
  'servers.created_at',
  'servers.updated_at',
  'sessions.created_at',
  'sessions.expires_at',
  'subusers.created_at',
  'subusers.updated_at',
  'users.created_at',
  'users.updated_at',
  'users.totp_enabled_at',
];

describe.runIf(POSTGRES.available)('the upgrade on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof emptyDatabase>>;
  let db: Db;
  let before: Awaited<ReturnType<typeof schema>>;
  let after: Awaited<ReturnType<typeof schema>>;

  beforeAll(async () => {
    database = await emptyDatabase(POSTGRES);
    db = database.db;
    await migrateThrough(db, previousMigration(db));
    // Written in the portable schema; the lease keeps the empty time its migration gave it.
    await insertRows(db, { created: T1, lease: '' });
    before = await schema(db);
    await migrateThrough(db, MIGRATION);
    after = await schema(db);
  });
  afterAll(async () => {
    await database?.close();
  });

  it('gives every flag, JSON and time column its own type, and no other column', () => {
    const found = natives(after.columns);
    expect(found).toEqual(
      expect.arrayContaining([
        ...FLAGS.map((c) => `${c}:flag`),
        ...JSONS.map((c) => `${c}:json`),
        ...TIMES.map((c) => `${c}:time`),
      ]),
    );
    // Columns added since are converted by the same rules, and nothing the rules do not name.
    const names = {
      flag: /^(is_.+|root_admin)$/,
      json: /^(properties|payload|permissions|allowed_ips|ignored_files|.+_json)$/,
      time: /^(timestamp|.+_at)$/,
    };
    for (const name of found) {
      const [column = '', kind = ''] = name.split(':');
      expect(column.split('.')[1], name).toMatch(names[kind as keyof typeof names]);
    }
    const left = after.columns.filter((row) => portableKind(schemaColumn(row)) !== undefined);
    expect(left).toEqual([]);
    const times = after.columns.filter((c) => c.data_type === 'timestamp with time zone');
    expect(new Set(times.map((c) => c.datetime_precision))).toEqual(new Set([3]));
  });

  it('notes on each column it converted the type it had, and on no other', () => {
    const former = { flag: 'integer', json: 'text', time: 'varchar(24)' };
    const madeNative = new Set(natives(before.columns));
    const expected = natives(after.columns)
      .filter((name) => !madeNative.has(name))
      .map((name) => {
        const [column = '', kind = ''] = name.split(':');
        return `${column}: ${former[kind as keyof typeof former]} until ${MIGRATION}`;
      });
    expect(expected).toContain(`users.root_admin: integer until ${MIGRATION}`);
    const commented = after.columns.filter((c) => c.comment !== null);
    expect(commented.map((c) => `${c.table_name}.${c.column_name}: ${c.comment}`)).toEqual(expected);
  });

  it('keeps indexes, constraints, NOT NULL and defaults (flags default to false)', () => {
    expect(after.indexes).toEqual(before.indexes);
    expect(after.constraints).toEqual(before.constraints);
    const shape = (s: typeof before) => s.columns.map((c) => [c.table_name, c.column_name, c.is_nullable]);
    expect(shape(after)).toEqual(shape(before));
    const defaults = (s: typeof before) =>
      Object.fromEntries(
        s.columns
          .filter((c) => c.column_default !== null)
          .map((c) => [`${c.table_name}.${c.column_name}`, c.column_default]),
      );
    expect(defaults(after)).toEqual({
      ...defaults(before),
      'users.root_admin': 'false',
      'backups.is_successful': 'false',
      'backups.is_locked': 'false',
    });
  });

  it('reads rows written before the upgrade as they were written', async () => {
    const user = await db.kysely.selectFrom('users').selectAll().executeTakeFirstOrThrow();
    expect([user.root_admin, user.created_at, user.updated_at]).toEqual([1, T1, T2]);
    const backup = await db.kysely.selectFrom('backups').selectAll().executeTakeFirstOrThrow();
    expect([backup.is_successful, backup.is_locked, backup.ignored_files]).toEqual([1, 0, ODD_JSON]);
    const lease = await sql<{ expires_at: string; infinite: number }>`select expires_at,
      expires_at = '-infinity' as infinite from maintenance_leases`.execute(db.kysely);
    expect(lease.rows).toEqual([{ expires_at: '', infinite: 1 }]);
  });

  it('refuses flags other than true and false, malformed times and malformed JSON', async () => {
    const loose = db.kysely as unknown as Loose;
    const refused = [
      loose.updateTable('users').set({ root_admin: 2 }),
      loose.updateTable('users').set({ root_admin: 'maybe' }),
      loose.updateTable('users').set({ created_at: 'not a time' }),
      loose.updateTable('users').set({ created_at: '2026-02-30T00:00:00.000Z' }),
      loose.updateTable('users').set({ created_at: '' }),
      loose.updateTable('backups').set({ ignored_files: '{not json' }),
      loose.updateTable('backups').set({ ignored_files: '["a",]' }),
      loose.updateTable('backups').set({ ignored_files: '' }),
    ];
    for (const update of refused) {
      await expect(update.execute(), update.compile().parameters.join()).rejects.toThrow(
        /invalid input|out of range/,
      );
    }
    expect((await db.kysely.selectFrom('users').selectAll().executeTakeFirstOrThrow()).created_at).toBe(T1);
  });

  it('stores times at millisecond precision, so every stored time reads back exactly', async () => {
    await sql`update servers set updated_at = '2026-11-22T03:49:51.123456Z'`.execute(db.kysely);
    const server = await db.kysely.selectFrom('servers').select('updated_at').executeTakeFirstOrThrow();
    expect(server.updated_at).toBe(T1);
    const equal = await db.kysely.selectFrom('servers').select('id').where('updated_at', '=', T1).execute();
    expect(equal).toHaveLength(1);
  });

  it('keeps JSON text byte for byte: json, not jsonb', async () => {
    const { rows } = await sql<{ text: string }>`select ignored_files::text as text from backups`.execute(
      db.kysely,
    );
    expect(rows[0]?.text).toBe(ODD_JSON);
  });
});

describe.runIf(POSTGRES.available)('stops the upgrade on PostgreSQL, naming the column', () => {
  it.each([
    ['a flag of 2', 'users', { root_admin: 2 }, /users\.root_admin: 1 row holds a value other than 0 and 1/],
    [
      'a time with no zone',
      'users',
      { updated_at: '2026-11-22T03:49:51' },
      /users\.updated_at: 1 row holds a time that is not ISO-8601/,
    ],
    ['malformed JSON', 'backups', { ignored_files: '[' }, /backups: invalid input syntax for type json/],
  ])('%s', async (_, table, change, message) => {
    const database = await emptyDatabase(POSTGRES);
    try {
      await migrateThrough(database.db, previousMigration(database.db));
      await insertRows(database.db, { created: T1, lease: '' });
      await (database.db.kysely as unknown as Loose).updateTable(table).set(change).execute();
      await expect(migrateToLatest(database.db)).rejects.toThrow(message);
      // Nothing was converted: the migration runs in one transaction.
      const types = await sql<{ data_type: string }>`select data_type from information_schema.columns
        where table_schema = current_schema() and table_name = 'users' and column_name = 'created_at'`.execute(
        database.db.kysely,
      );
      expect(types.rows).toEqual([{ data_type: 'character varying' }]);
    } finally {
      await database.close();
    }
  });
});

describe.runIf(POSTGRES.available)('the way back down on PostgreSQL', () => {
  it('restores the portable types, defaults and values exactly', async () => {
    const database = await emptyDatabase(POSTGRES);
    const { db } = database;
    try {
      const previous = previousMigration(db);
      await migrateThrough(db, previous);
      await insertRows(db, { created: T1, lease: '' });
      const rows = async () => ({
        users: await sql`select * from users`.execute(db.kysely),
        backups: await sql`select * from backups`.execute(db.kysely),
        leases: await sql`select * from maintenance_leases`.execute(db.kysely),
      });
      const portable = await schema(db);
      const values = await rows();
      await migrateThrough(db, MIGRATION);
      expect(natives((await schema(db)).columns)).not.toEqual([]);

      const result = await migratorFor(db, migrations(db)).migrateTo(previous);
      expect(result.error).toBeUndefined();
      expect(result.results?.map((r) => [r.migrationName, r.direction, r.status])).toContainEqual([
        MIGRATION,
        'Down',
        'Success',
      ]);
      expect(await schema(db)).toEqual(portable);
      expect((await rows()).users.rows).toEqual(values.users.rows);
      expect((await rows()).backups.rows).toEqual(values.backups.rows);
      expect((await rows()).leases.rows).toEqual([{ name: 'retention', owner: null, expires_at: '' }]);
    } finally {
      await database.close();
    }
  });
});

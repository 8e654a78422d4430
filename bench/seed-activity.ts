/**
 * Fills the database named by DATABASE_URL with activity for the feed benchmark: `--total` rows
 * in activity_logs (each with one subject), `--entries` of them in the feed of user `--user`,
 * spread evenly over the whole table and its time range; the rest belong to 1,000 other
 * subjects. The schema is Aerie's own (migrations run first), and the user is created when
 * missing; a fresh API key for that user is printed last, as `TOKEN=...`.
 *
 *   DATABASE_URL=sqlite:/tmp/feed.db node --import tsx bench/seed-activity.ts \
 *     --total 1000000 --user bench --entries 10000
 *
 * Rows go in by multi-row INSERTs in large transactions (SQLite through better-sqlite3 directly,
 * with the activity tables' secondary indexes dropped during the load and rebuilt after).
 * Of the user's entries: half are logins by the user from 10.0.x.y, a quarter are API key
 * changes by the user, a quarter failed logins by nobody (the system) from 192.168.x.y.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { openRuntime } from '../src/runtime.ts';

const { values } = parseArgs({
  options: {
    total: { type: 'string' },
    user: { type: 'string', default: 'bench' },
    entries: { type: 'string', default: '10000' },
  },
});
const total = Number(values.total);
const entries = Number(values.entries);
if (!Number.isSafeInteger(total) || total < 1 || !Number.isSafeInteger(entries) || entries > total)
  throw new Error('usage: seed-activity.ts --total N --user NAME --entries K (K <= N)');

const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
const runtime = await openRuntime(config);
const { services, db } = runtime;
const username = values.user;
const user =
  (await services.users.findByLogin(username)) ??
  (await services.users.create({ username, email: `${username}@example.com`, admin: false })).user;
const context = {
  batch: randomUUID(),
  ip: '127.0.0.1',
  userAgent: 'seed',
  actor: { user, apiKeyId: null, sessionId: null },
};
const { token } = await services.apiKeys.create(context, { description: 'feed benchmark', allowed_ips: [] });

const subjectColumns = new Set(
  (await db.kysely.introspection.getTables())
    .find((t) => t.name === 'activity_log_subjects')
    ?.columns.map((c) => c.name) ?? [],
);
const copiesFilters = subjectColumns.has('event');
const keepsCounts = (await db.kysely.introspection.getTables()).some(
  (t) => t.name === 'activity_feed_counts',
);
const maxId = await db.kysely
  .selectFrom('activity_logs')
  .select((eb) => eb.fn.max('id').as('id'))
  .executeTakeFirstOrThrow();
const firstId = Number(maxId.id ?? 0) + 1;
await runtime.close();

/** The kept feed counts, recounted from the subjects rows once the bulk load is in. */
const RECOUNT = [
  'delete from activity_feed_counts',
  `insert into activity_feed_counts (subject_type, subject_id, entries)
     select subject_type, subject_id, count(*) from activity_log_subjects group by subject_type, subject_id`,
];

const OTHERS = Array.from({ length: 1000 }, () => randomUUID());
const OTHER_EVENTS = ['auth:login', 'auth:logout', 'user:api-key.create', 'server:backup.complete'];
// Entries 100 ms apart, the last one a minute ago: a log as recent as a real one (and inside
// the default retention period), whatever day it is seeded.
const start = Date.now() - 60_000 - total * 100;

/** One row: [id, batch, event, ip, actor_id, properties, timestamp, subject_id]. */
type Row = [number, string, string, string | null, string | null, string, string, string];

function row(i: number): Row {
  const id = firstId + i;
  // Exactly K of the N rows are the user's, evenly spread over the table.
  const j = Math.floor(((i + 1) * entries) / total);
  const mine = j > Math.floor((i * entries) / total);
  const timestamp = new Date(start + i * 100).toISOString();
  const batch = randomUUID();
  if (mine) {
    const kind = j % 4;
    const ip = kind === 3 ? `192.168.${(i >> 8) & 255}.${i & 255}` : `10.0.${(i >> 8) & 255}.${i & 255}`;
    const event = kind <= 1 ? 'auth:login' : kind === 2 ? 'user:api-key.create' : 'auth:fail';
    const actor = kind === 3 ? null : user.id;
    const properties =
      kind === 2 ? `{"identifier":"ptlc_${i}"}` : kind === 3 ? `{"username":"${username}"}` : '{}';
    return [id, batch, event, ip, actor, properties, timestamp, user.id];
  }
  const event = OTHER_EVENTS[i % OTHER_EVENTS.length]!;
  return [
    id,
    batch,
    event,
    `172.16.${(i >> 8) & 255}.${i & 255}`,
    null,
    '{}',
    timestamp,
    OTHERS[i % OTHERS.length]!,
  ];
}

const CHUNK = config.database.kind === 'postgres' ? 5000 : 500;
const TRANSACTION = 50_000;
const began = Date.now();
let done = 0;
function progress(n: number): void {
  done += n;
  if (done % 500_000 < n || done === total)
    process.stderr.write(`seeded ${done} / ${total} (${((Date.now() - began) / 1000).toFixed(1)} s)\n`);
}

const logColumns = '(id, batch, event, ip, actor_id, api_key_id, properties, timestamp)';
const subjectList = copiesFilters
  ? '(activity_log_id, subject_type, subject_id, timestamp, event, ip, actor_id)'
  : '(activity_log_id, subject_type, subject_id, timestamp)';
const subjectValues = (r: Row) =>
  copiesFilters ? [r[0], 'user', r[7], r[6], r[2], r[3], r[4]] : [r[0], 'user', r[7], r[6]];
const placeholders = (n: number, width: number, mark: (k: number) => string) =>
  Array.from(
    { length: n },
    (_, j) => `(${Array.from({ length: width }, (_, k) => mark(j * width + k)).join(', ')})`,
  ).join(', ');
const logValues = (r: Row) => [r[0], r[1], r[2], r[3], r[4], null, r[5], r[6]];
const subjectWidth = copiesFilters ? 7 : 4;

if (config.database.kind === 'sqlite') {
  const sqlite = new SQLite(config.database.sqlitePath!);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = OFF');
  sqlite.pragma('cache_size = -262144');
  // Secondary indexes are rebuilt once at the end: far faster than keeping them up row by row.
  const indexes = sqlite
    .prepare(
      "select name, sql from sqlite_master where type = 'index' and sql is not null and tbl_name in ('activity_logs', 'activity_log_subjects')",
    )
    .all() as { name: string; sql: string }[];
  for (const index of indexes) sqlite.exec(`drop index ${index.name}`);
  const q = () => '?';
  const insertLogs = sqlite.prepare(
    `insert into activity_logs ${logColumns} values ${placeholders(CHUNK, 8, q)}`,
  );
  const insertSubjects = sqlite.prepare(
    `insert into activity_log_subjects ${subjectList} values ${placeholders(CHUNK, subjectWidth, q)}`,
  );
  const insertLog = sqlite.prepare(`insert into activity_logs ${logColumns} values ${placeholders(1, 8, q)}`);
  const insertSubject = sqlite.prepare(
    `insert into activity_log_subjects ${subjectList} values ${placeholders(1, subjectWidth, q)}`,
  );
  const load = sqlite.transaction((from: number, to: number) => {
    for (let i = from; i < to; i += CHUNK) {
      const rows = Array.from({ length: Math.min(CHUNK, to - i) }, (_, j) => row(i + j));
      if (rows.length === CHUNK) {
        insertLogs.run(rows.flatMap(logValues));
        insertSubjects.run(rows.flatMap(subjectValues));
      } else {
        for (const r of rows) {
          insertLog.run(logValues(r));
          insertSubject.run(subjectValues(r));
        }
      }
    }
  });
  for (let i = 0; i < total; i += TRANSACTION) {
    const to = Math.min(total, i + TRANSACTION);
    load(i, to);
    progress(to - i);
  }
  process.stderr.write('rebuilding indexes\n');
  for (const index of indexes) sqlite.exec(index.sql);
  if (keepsCounts) for (const statement of RECOUNT) sqlite.exec(statement);
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
} else if (config.database.kind === 'postgres') {
  const client = new pg.Client({ connectionString: config.database.url });
  await client.connect();
  const q = (k: number) => `$${k + 1}`;
  for (let i = 0; i < total; i += TRANSACTION) {
    const to = Math.min(total, i + TRANSACTION);
    await client.query('begin');
    for (let c = i; c < to; c += CHUNK) {
      const rows = Array.from({ length: Math.min(CHUNK, to - c) }, (_, j) => row(c + j));
      await client.query(
        `insert into activity_logs ${logColumns} values ${placeholders(rows.length, 8, q)}`,
        rows.flatMap(logValues),
      );
      await client.query(
        `insert into activity_log_subjects ${subjectList} values ${placeholders(rows.length, subjectWidth, q)}`,
        rows.flatMap(subjectValues),
      );
    }
    await client.query('commit');
    progress(to - i);
  }
  await client.query(
    `select setval(pg_get_serial_sequence('activity_logs', 'id'), (select max(id) from activity_logs))`,
  );
  if (keepsCounts) for (const statement of RECOUNT) await client.query(statement);
  process.stderr.write('vacuum analyze\n');
  await client.query('vacuum analyze activity_logs');
  await client.query('vacuum analyze activity_log_subjects');
  await client.end();
} else {
  const connection = await createConnection(config.database.url);
  for (let i = 0; i < total; i += TRANSACTION) {
    const to = Math.min(total, i + TRANSACTION);
    await connection.beginTransaction();
    for (let c = i; c < to; c += CHUNK) {
      const rows = Array.from({ length: Math.min(CHUNK, to - c) }, (_, j) => row(c + j));
      await connection.query(`insert into activity_logs ${logColumns} values ?`, [rows.map(logValues)]);
      await connection.query(`insert into activity_log_subjects ${subjectList} values ?`, [
        rows.map(subjectValues),
      ]);
    }
    await connection.commit();
    progress(to - i);
  }
  if (keepsCounts) for (const statement of RECOUNT) await connection.query(statement);
  await connection.query('analyze table activity_logs, activity_log_subjects');
  await connection.end();
}

process.stderr.write(`done in ${((Date.now() - began) / 1000).toFixed(1)} s\n`);
process.stdout.write(`USER_ID=${user.id}\nTOKEN=${token}\n`);

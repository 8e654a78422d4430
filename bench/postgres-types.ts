/**
 * PostgreSQL with the portable column types (text times, integer flags, text JSON) against its
 * own (timestamptz, boolean, json): migration 2026_12_02_000000_postgres_types. On a database
 * seeded by bench/seed-activity.ts (which leaves it migrated to the latest schema), it migrates
 * down to the portable types, measures, migrates up again and measures: the sizes of the activity
 * tables and their indexes (`pg_relation_size`), and `EXPLAIN ANALYZE` of the default feed's page
 * query (page 1 and page 400, 25 entries) for `--user`, each the median of `--runs` after a
 * warm-up. Each state follows a `VACUUM ANALYZE`, as autovacuum would leave it.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/feed node --import tsx bench/postgres-types.ts \
 *     --user bench --runs 5
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { connect, type Db } from '../src/db/connection.ts';
import { knownMigrations, migrateToLatest, migrations, migratorFor } from '../src/db/migrate.ts';

const MIGRATION = '2026_12_02_000000_postgres_types';
const { values } = parseArgs({
  options: { user: { type: 'string', default: 'bench' }, runs: { type: 'string', default: '5' } },
});
const runs = Number(values.runs);
const url = process.env.DATABASE_URL ?? '';
if (!url.startsWith('postgres')) throw new Error('DATABASE_URL must name a PostgreSQL database');

const db = connect({ kind: 'postgres', url, sqlitePath: null });
const user = await db.kysely
  .selectFrom('users')
  .select('id')
  .where('username', '=', values.user ?? 'bench')
  .executeTakeFirstOrThrow();

/** The default feed's page query, as ActivityRepository.page compiles it, with literals. */
const page = (offset: number) =>
  sql`select "l"."id", "l"."batch", "l"."event", "l"."ip", "l"."actor_id", "l"."api_key_id",
      "l"."properties", "l"."timestamp", "u"."username" as "actor_username", "u"."email" as "actor_email",
      "u"."first_name" as "actor_first_name", "u"."last_name" as "actor_last_name"
    from (select "s"."activity_log_id", "s"."timestamp" from "activity_log_subjects" as "s"
      where "s"."subject_type" = 'user' and "s"."subject_id" = ${sql.lit(user.id)}
      order by "s"."timestamp" desc, "s"."activity_log_id" desc limit 25 offset ${sql.lit(offset)}) as "p"
    inner join "activity_logs" as "l" on "l"."id" = "p"."activity_log_id"
    left join "users" as "u" on "u"."id" = "l"."actor_id"
    order by "p"."timestamp" desc, "p"."activity_log_id" desc`;

const RELATIONS = [
  'activity_logs',
  'activity_logs_pkey',
  'activity_logs_actor_index',
  'activity_logs_timestamp_index',
  'activity_logs_batch_index',
  'activity_log_subjects',
  'activity_log_subjects_pk',
  'activity_log_subjects_feed_filter_index',
];

async function explainMs(query: ReturnType<typeof page>): Promise<number> {
  // The plan is json, which the pool reads as its text.
  const { rows } = await sql<{ 'QUERY PLAN': string }>`explain (analyze, format json) ${query}`.execute(
    db.kysely,
  );
  const plan = JSON.parse(rows[0]?.['QUERY PLAN'] ?? '[]') as [{ 'Execution Time': number }];
  return plan[0]['Execution Time'];
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  return `${median.toFixed(3)} ms (${sorted[0]?.toFixed(3)}–${sorted.at(-1)?.toFixed(3)})`;
}

async function measure(state: string): Promise<void> {
  await sql`vacuum analyze activity_logs`.execute(db.kysely);
  await sql`vacuum analyze activity_log_subjects`.execute(db.kysely);
  const sizes = await sql<{
    name: string;
    bytes: number;
  }>`select r as name, pg_relation_size(r::regclass) as bytes
    from unnest(${RELATIONS}::text[]) as r`.execute(db.kysely);
  process.stdout.write(`\n${state}\n`);
  for (const { name, bytes } of sizes.rows)
    process.stdout.write(`  ${name}: ${(bytes / 2 ** 20).toFixed(1)} MiB\n`);
  for (const offset of [0, 9975]) {
    await explainMs(page(offset));
    const times: number[] = [];
    for (let i = 0; i < runs; i += 1) times.push(await explainMs(page(offset)));
    process.stdout.write(`  page at offset ${offset}: ${summary(times)}\n`);
  }
  const plan = await sql<{ 'QUERY PLAN': string }>`explain ${page(0)}`.execute(db.kysely);
  process.stdout.write(`${plan.rows.map((r) => `    ${r['QUERY PLAN']}`).join('\n')}\n`);
}

async function timed(what: string, step: (db: Db) => Promise<unknown>): Promise<void> {
  const began = performance.now();
  await step(db);
  process.stdout.write(`\n${what}: ${((performance.now() - began) / 1000).toFixed(1)} s\n`);
}

const names = knownMigrations(db);
const previous = names[names.indexOf(MIGRATION) - 1];
if (previous === undefined) throw new Error(`${MIGRATION} is not among the migrations`);
await timed('down to the portable types', async () => {
  const result = await migratorFor(db, migrations(db)).migrateTo(previous);
  if (result.error !== undefined) throw new Error('migrating down failed', { cause: result.error });
});
await measure('portable types (varchar(24) times, integer flags, text JSON)');
await timed(`up: ${MIGRATION}`, migrateToLatest);
await measure("PostgreSQL's own types (timestamptz(3), boolean, json)");
await db.destroy();

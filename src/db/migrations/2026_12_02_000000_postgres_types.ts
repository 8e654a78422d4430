import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { nativeKind, portableKind, type SchemaColumn, type TypedColumnKind } from '../column-types.ts';

/**
 * PostgreSQL stores flags, JSON and times in its own types, which check every value written and
 * take less room: the 0/1 flags become `boolean`, JSON text becomes `json` (not `jsonb`, which
 * would reorder keys and drop duplicates: activity properties come back in the order written),
 * and the ISO-8601 times become `timestamptz(3)` (8 bytes instead of 25, at the millisecond
 * precision Aerie writes). The application sees the same values as before: see the type parsers
 * in `src/db/connection.ts`.
 *
 * The columns are found in `information_schema` when the migration runs, by the rules of
 * `portableKind` (`src/db/column-types.ts`), so columns added by any earlier migration are
 * converted too. Each table is rewritten once, with all its columns; indexes are rebuilt with
 * it, and defaults, NOT NULL and keys are kept. Before it is rewritten, a table whose flags hold
 * other values than 0 and 1, or whose times are not ISO-8601 with a zone, stops the migration
 * with the column named, rather than being guessed at. The empty time that a lease row starts
 * with (`''`, before every other) becomes `-infinity`, and `''` again on the way down.
 *
 * Each converted column's comment names the type it had; the way down converts those columns
 * back, and leaves any that an earlier migration created with PostgreSQL's own type (through
 * `timeType`, `flagType` or `jsonType`) as they were made.
 *
 * SQLite keeps its types. MariaDB/MySQL already has its flags as `BOOLEAN` and JSON as `LONGTEXT`
 * (2026_11_25_000000_exact_text); its times stay text: `DATETIME` has no time zone, `TIMESTAMP`
 * ends in 2038, and both refuse, in strict mode, the `…Z` strings the application writes.
 */
export function postgresTypesMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (kind !== 'postgres') return;
      for (const [table, columns] of await columnsByTable(db, portableKind)) {
        await refuseUnconvertible(db, table, columns);
        await alter(db, table, columns.flatMap(toNative));
        for (const c of columns) await mark(db, c, CONVERTED[c.kind]);
      }
    },

    // Only the columns this migration converted, found by their comment: a column an earlier
    // migration made with PostgreSQL's own type (through column-types.ts) keeps it.
    async down(db: Kysely<unknown>): Promise<void> {
      if (kind !== 'postgres') return;
      const converted = (column: SchemaColumn & { comment: string | null }) => {
        const kind = nativeKind(column);
        return kind !== undefined && column.comment === CONVERTED[kind] ? kind : undefined;
      };
      for (const [table, columns] of await columnsByTable(db, converted)) {
        await alter(db, table, columns.flatMap(toPortable));
        for (const c of columns) await mark(db, c, null);
      }
    },
  };
}

interface TypedColumn extends SchemaColumn {
  kind: TypedColumnKind;
  /** `column_default`, as PostgreSQL prints it. */
  default: string | null;
}

/** The comment this migration leaves on each column it converts, naming the type it had. */
const CONVERTED: Record<TypedColumnKind, string> = {
  flag: 'integer until 2026_12_02_000000_postgres_types',
  json: 'text until 2026_12_02_000000_postgres_types',
  time: 'varchar(24) until 2026_12_02_000000_postgres_types',
};

async function mark(db: Kysely<unknown>, c: TypedColumn, comment: string | null): Promise<void> {
  const target = sql`${sql.table(c.table)}.${sql.ref(c.column)}`;
  await sql`comment on column ${target} is ${comment === null ? sql`null` : sql.lit(comment)}`.execute(db);
}

/** The base tables' columns that `classify` gives a kind, by table. */
async function columnsByTable(
  db: Kysely<unknown>,
  classify: (column: SchemaColumn & { comment: string | null }) => TypedColumnKind | undefined,
): Promise<Map<string, TypedColumn[]>> {
  const { rows } = await sql<{
    table_name: string;
    column_name: string;
    data_type: string;
    character_maximum_length: number | null;
    column_default: string | null;
    comment: string | null;
  }>`select c.table_name, c.column_name, c.data_type, c.character_maximum_length, c.column_default,
      col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position) as comment
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(db);
  const tables = new Map<string, TypedColumn[]>();
  for (const row of rows) {
    const column: SchemaColumn = {
      table: row.table_name,
      column: row.column_name,
      dataType: row.data_type,
      maxLength: row.character_maximum_length === null ? null : Number(row.character_maximum_length),
    };
    const kind = classify({ ...column, comment: row.comment });
    if (kind === undefined) continue;
    const list = tables.get(column.table) ?? [];
    list.push({ ...column, kind, default: row.column_default });
    tables.set(column.table, list);
  }
  return tables;
}

/** ISO-8601 with a date, a time to the second or finer, and a zone (`Z` or `±hh:mm`). */
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?(Z|[+-]\\d{2}:\\d{2})$';

/** Stops the migration if a flag or a time of `table` holds a value that has no faithful conversion. */
async function refuseUnconvertible(
  db: Kysely<unknown>,
  table: string,
  columns: TypedColumn[],
): Promise<void> {
  const checked = columns.filter((c) => c.kind !== 'json');
  if (checked.length === 0) return;
  const counts = checked.map((c, i) => {
    const col = sql.ref(c.column);
    const bad = c.kind === 'flag' ? sql`${col} not in (0, 1)` : sql`${col} <> '' and ${col} !~ ${ISO_TIME}`;
    return sql`count(*) filter (where ${bad}) as ${sql.id(`c${i}`)}`;
  });
  const { rows } = await sql<
    Record<string, string>
  >`select ${sql.join(counts)} from ${sql.table(table)}`.execute(db);
  const found = rows[0] ?? {};
  checked.forEach((c, i) => {
    const n = Number(found[`c${i}`] ?? 0);
    if (n === 0) return;
    const what = c.kind === 'flag' ? 'a value other than 0 and 1' : 'a time that is not ISO-8601 with a zone';
    const rows = n === 1 ? '1 row holds' : `${n} rows hold`;
    throw new Error(`${table}.${c.column}: ${rows} ${what}; correct them and migrate again`);
  });
}

/** The clauses that turn a portable column into PostgreSQL's own type. */
function toNative(c: TypedColumn): RawBuilder<unknown>[] {
  const col = sql.ref(c.column);
  const alter = (rest: RawBuilder<unknown>) => sql`alter column ${col} ${rest}`;
  if (c.kind === 'flag') {
    const type = alter(sql`type boolean using ${col} <> 0`);
    if (c.default === null) return [type];
    const on = flagDefault(c, ['0', '1']);
    return [alter(sql`drop default`), type, alter(sql`set default ${sql.lit(on)}`)];
  }
  noDefault(c);
  if (c.kind === 'json') return [alter(sql`type json using ${col}::json`)];
  return [
    alter(sql`type timestamptz(3) using case when ${col} = '' then '-infinity' else ${col}::timestamptz end`),
  ];
}

/** The clauses that turn a column of PostgreSQL's own type back into its portable type. */
function toPortable(c: TypedColumn): RawBuilder<unknown>[] {
  const col = sql.ref(c.column);
  const alter = (rest: RawBuilder<unknown>) => sql`alter column ${col} ${rest}`;
  if (c.kind === 'flag') {
    const type = alter(sql`type integer using case when ${col} then 1 else 0 end`);
    if (c.default === null) return [type];
    const on = flagDefault(c, ['false', 'true']);
    return [alter(sql`drop default`), type, alter(sql`set default ${sql.lit(on ? 1 : 0)}`)];
  }
  noDefault(c);
  if (c.kind === 'json') return [alter(sql`type text using ${col}::text`)];
  return [
    alter(sql`type varchar(24) using case when ${col} = '-infinity' then ''
      when ${col} = 'infinity' then 'infinity'
      else to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end`),
  ];
}

/** Whether a flag's default is on, from its spelling as [off, on]; any other default stops the migration. */
function flagDefault(c: TypedColumn, [off, on]: [string, string]): boolean {
  if (c.default === off || c.default === on) return c.default === on;
  throw new Error(`${c.table}.${c.column}: unexpected default ${c.default}`);
}

function noDefault(c: TypedColumn): void {
  if (c.default !== null) throw new Error(`${c.table}.${c.column}: unexpected default ${c.default}`);
}

/**
 * Rewrites `table` once with every clause, then gathers its statistics again: changing a column's
 * type drops them, and the planner chooses the feed's plans by them.
 */
async function alter(db: Kysely<unknown>, table: string, clauses: RawBuilder<unknown>[]): Promise<void> {
  try {
    await sql`alter table ${sql.table(table)} ${sql.join(clauses)}`.execute(db);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${table}: ${reason}`, { cause: error });
  }
  await sql`analyze ${sql.table(table)}`.execute(db);
}

import { sql, type ColumnDataType, type RawBuilder } from 'kysely';
import type { DatabaseKind } from '../config.ts';

/**
 * The column types of Aerie's three kinds of typed value on each engine, for migrations that add
 * columns, and the rules that find the existing columns of each kind.
 *
 * | kind | SQLite | PostgreSQL | MariaDB/MySQL |
 * |---|---|---|---|
 * | flag (0/1) | `integer` | `boolean` | `boolean` (a one-byte integer) |
 * | JSON text | `text` | `json` | `longtext` |
 * | time (UTC ISO-8601, milliseconds) | `varchar(24)` | `timestamptz(3)` | `varchar(24)` |
 *
 * The application reads and writes the same values on every engine: flags as the numbers 0 and 1,
 * JSON as its text, times as `2026-11-22T03:49:51.123Z` (see `src/db/connection.ts` for how
 * PostgreSQL's values are read back). PostgreSQL's `json` keeps the text as written (key order,
 * spacing, duplicate keys); `jsonb` would not.
 */
export type TypedColumnKind = 'flag' | 'json' | 'time';

/** The type of a column that holds a UUID, as text: the same on every engine. */
export const uuidType = 'varchar(36)';

/** The type of a new 0/1 flag column. */
export function flagType(kind: DatabaseKind): ColumnDataType {
  return kind === 'sqlite' ? 'integer' : 'boolean';
}

/** The default of a flag column, as its engine spells it. */
export function flagDefault(kind: DatabaseKind, on: boolean): boolean | number {
  if (kind === 'postgres') return on;
  return on ? 1 : 0;
}

/** The type of a new column that holds JSON text. */
export function jsonType(kind: DatabaseKind): ColumnDataType | RawBuilder<unknown> {
  return kind === 'postgres' ? 'json' : kind === 'mysql' ? sql`longtext` : 'text';
}

/**
 * The type of a new time column. On PostgreSQL at millisecond precision, the precision Aerie
 * writes: a value always reads back exactly as it was written.
 */
export function timeType(kind: DatabaseKind): ColumnDataType {
  return kind === 'postgres' ? 'timestamptz(3)' : 'varchar(24)';
}

/** A column as `information_schema.columns` describes it. */
export interface SchemaColumn {
  table: string;
  column: string;
  /** `data_type`: `integer`, `text`, `character varying`, `boolean`, … */
  dataType: string;
  /** `character_maximum_length`, for character types. */
  maxLength: number | null;
}

/** The query builder's own tables, which keep their types. */
const MIGRATOR_TABLES = new Set(['aerie_migrations', 'aerie_migrations_lock']);

/** Integer flags whose names do not start with `is_`. */
const FLAG_NAMES = new Set(['root_admin']);

/** Text columns that hold JSON (the application writes them with JSON.stringify). */
const JSON_NAMES = new Set(['properties', 'payload', 'permissions', 'allowed_ips', 'ignored_files']);

/**
 * What a column stored the portable way (before PostgreSQL's own types) holds:
 *
 * - a flag: an `integer` named `is_…` or `root_admin`;
 * - JSON: a `text` column named `properties`, `payload`, `permissions`, `allowed_ips`,
 *   `ignored_files` or `…_json`;
 * - a time: a `varchar(24)` named `timestamp` or `…_at`.
 *
 * Anything else, and every column of the migration tables, is none of these.
 */
export function portableKind(column: SchemaColumn): TypedColumnKind | undefined {
  if (MIGRATOR_TABLES.has(column.table)) return undefined;
  const name = column.column;
  if (column.dataType === 'integer' && (name.startsWith('is_') || FLAG_NAMES.has(name))) return 'flag';
  if (column.dataType === 'text' && (JSON_NAMES.has(name) || name.endsWith('_json'))) return 'json';
  if (
    column.dataType === 'character varying' &&
    column.maxLength === 24 &&
    (name === 'timestamp' || name.endsWith('_at'))
  ) {
    return 'time';
  }
  return undefined;
}

/** What a column of one of PostgreSQL's own types holds: the reverse of `portableKind`. */
export function nativeKind(column: SchemaColumn): TypedColumnKind | undefined {
  if (MIGRATOR_TABLES.has(column.table)) return undefined;
  if (column.dataType === 'boolean') return 'flag';
  if (column.dataType === 'json') return 'json';
  if (column.dataType === 'timestamp with time zone') return 'time';
  return undefined;
}

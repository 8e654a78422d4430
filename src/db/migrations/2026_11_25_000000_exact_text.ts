import { sql, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/**
 * Text compares exactly on MariaDB/MySQL, as it already does on SQLite and PostgreSQL, and holds
 * whatever the API accepts.
 *
 * Earlier migrations left the character set and collation to the server's default, which is
 * usually case- and accent-insensitive (`utf8mb4_general_ci`): an API key's identifier then
 * matched in the wrong letter case, a feed filter matched `é` for `e`, and a trailing space was
 * ignored. Every table, and the database's default for tables made later, becomes `utf8mb4` with
 * a binary collation that does not pad (`utf8mb4_nopad_bin`; `utf8mb4_0900_bin` on MySQL).
 *
 * Columns holding JSON or other unbounded text become `LONGTEXT` (up to 4 GiB) instead of `TEXT`,
 * which stops at 64 KiB below what the API accepts in the worst case. (Not MariaDB's `JSON`: its
 * check refuses the escaped lone surrogates, `\ud800`, that JSON.stringify writes for text the
 * API takes.) The 0/1 flags become `BOOLEAN`, a one-byte integer read back as 0 and 1 as before.
 *
 * SQLite and PostgreSQL need nothing: their text already compares exactly and has no 64 KiB
 * limit.
 */
export function exactTextMigration(kind: DatabaseKind) {
  /** What each table gets beside its new collation. */
  const changes: Record<string, string[]> = {
    users: ['modify root_admin boolean not null default 0'],
    api_keys: ['modify allowed_ips longtext not null'],
    sessions: [],
    servers: ['modify description longtext not null'],
    subusers: ['modify permissions longtext not null'],
    backups: [
      'modify ignored_files longtext not null',
      'modify is_successful boolean not null default 0',
      'modify is_locked boolean not null default 0',
    ],
    activity_logs: ['modify properties longtext not null'],
    activity_log_subjects: [],
    jobs: ['modify payload longtext not null', 'modify error longtext'],
    user_numbers: [],
  };

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (kind !== 'mysql') return;
      // One connection throughout, for the session setting below.
      await db.connection().execute(async (connection) => {
        const { rows } = await sql<{ version: string }>`select version() as version`.execute(connection);
        const collation = /mariadb/i.test(rows[0]?.version ?? '') ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
        await sql`alter database character set utf8mb4 collate ${sql.raw(collation)}`.execute(connection);
        // A column a foreign key joins cannot change collation, even with the checks off: the keys
        // are taken off, every table converted, and the same keys put back. The rows already
        // satisfy them, so they go back on without being checked again.
        const keys = await foreignKeys(connection);
        await sql`set foreign_key_checks = 0`.execute(connection);
        try {
          for (const key of keys) {
            await sql`alter table ${sql.table(key.table)} drop foreign key ${sql.id(key.name)}`.execute(
              connection,
            );
          }
          for (const [table, modify] of Object.entries(changes)) {
            const clauses = [`convert to character set utf8mb4 collate ${collation}`, ...modify];
            await sql`alter table ${sql.table(table)} ${sql.raw(clauses.join(', '))}`.execute(connection);
          }
          for (const key of keys) {
            await sql`alter table ${sql.table(key.table)} add constraint ${sql.id(key.name)}
              foreign key (${sql.join(key.columns.map((c) => sql.id(c)))})
              references ${sql.table(key.references)} (${sql.join(key.referencedColumns.map((c) => sql.id(c)))})
              on delete ${sql.raw(rule(key.onDelete))} on update ${sql.raw(rule(key.onUpdate))}`.execute(
              connection,
            );
          }
        } finally {
          await sql`set foreign_key_checks = 1`.execute(connection);
        }
      });
    },
  };
}

interface ForeignKey {
  table: string;
  name: string;
  columns: string[];
  references: string;
  referencedColumns: string[];
  onDelete: string;
  onUpdate: string;
}

/** Every foreign key of the current database, with its columns in order. */
async function foreignKeys(db: Kysely<unknown>): Promise<ForeignKey[]> {
  const { rows } = await sql<{
    table_name: string;
    constraint_name: string;
    column_name: string;
    referenced_table_name: string;
    referenced_column_name: string;
    delete_rule: string;
    update_rule: string;
  }>`select k.table_name as table_name, k.constraint_name as constraint_name,
      k.column_name as column_name, k.referenced_table_name as referenced_table_name,
      k.referenced_column_name as referenced_column_name, r.delete_rule as delete_rule,
      r.update_rule as update_rule
    from information_schema.key_column_usage k
    join information_schema.referential_constraints r
      on r.constraint_schema = k.constraint_schema and r.constraint_name = k.constraint_name
        and r.table_name = k.table_name
    where k.table_schema = database() and k.referenced_table_name is not null
    order by k.table_name, k.constraint_name, k.ordinal_position`.execute(db);
  const keys = new Map<string, ForeignKey>();
  for (const row of rows) {
    const id = `${row.table_name}.${row.constraint_name}`;
    const key = keys.get(id) ?? {
      table: row.table_name,
      name: row.constraint_name,
      columns: [],
      references: row.referenced_table_name,
      referencedColumns: [],
      onDelete: row.delete_rule,
      onUpdate: row.update_rule,
    };
    key.columns.push(row.column_name);
    key.referencedColumns.push(row.referenced_column_name);
    keys.set(id, key);
  }
  return [...keys.values()];
}

/** A referential action as information_schema spells it, checked before it is written into SQL. */
function rule(action: string): string {
  const known = ['CASCADE', 'SET NULL', 'RESTRICT', 'NO ACTION', 'SET DEFAULT'];
  if (!known.includes(action.toUpperCase())) throw new Error(`unknown referential action ${action}`);
  return action;
}

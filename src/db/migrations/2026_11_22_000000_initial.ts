import type { ColumnDefinitionBuilder, Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { uuidType } from '../column-types.ts';
import { createIndex } from '../create-index.ts';

type Column = (col: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;

/**
 * The whole product's schema: users and their credentials, the activity log and its subjects,
 * servers with their subusers and backups, and the job queue. Written with the schema builder
 * so the same file runs on SQLite, PostgreSQL and MariaDB.
 */
export function initialMigration(kind: DatabaseKind) {
  const serialType = kind === 'postgres' ? 'bigserial' : kind === 'mysql' ? 'bigint' : 'integer';
  const serial: Column = (col) => (kind === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement());
  const bigint = kind === 'sqlite' ? 'integer' : 'bigint';
  const time = 'varchar(24)';

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('users')
        .addColumn('id', uuidType, (c) => c.primaryKey())
        .addColumn('username', 'varchar(191)', (c) => c.notNull().unique())
        .addColumn('email', 'varchar(191)', (c) => c.notNull().unique())
        .addColumn('password_hash', 'varchar(255)', (c) => c.notNull())
        .addColumn('first_name', 'varchar(191)', (c) => c.notNull())
        .addColumn('last_name', 'varchar(191)', (c) => c.notNull())
        .addColumn('language', 'varchar(16)', (c) => c.notNull().defaultTo('en'))
        .addColumn('root_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_keys')
        .addColumn('id', serialType, serial)
        .addColumn('user_id', uuidType, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('identifier', 'varchar(16)', (c) => c.notNull().unique())
        .addColumn('token_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('description', 'varchar(500)', (c) => c.notNull())
        .addColumn('allowed_ips', 'text', (c) => c.notNull())
        .addColumn('last_used_at', time)
        .addColumn('created_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'api_keys_user_id_index', 'api_keys', ['user_id']);

      await db.schema
        .createTable('sessions')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_id', uuidType, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('ip', 'varchar(45)', (c) => c.notNull())
        .addColumn('user_agent', 'varchar(500)', (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'sessions_user_id_index', 'sessions', ['user_id']);
      await createIndex(db, 'sessions_expires_at_index', 'sessions', ['expires_at']);

      await db.schema
        .createTable('servers')
        .addColumn('id', uuidType, (c) => c.primaryKey())
        .addColumn('identifier', 'varchar(8)', (c) => c.notNull().unique())
        .addColumn('owner_id', uuidType, (c) => c.notNull().references('users.id'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(32)')
        .addColumn('disk_mb', bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('backup_limit', 'integer', (c) => c.notNull().defaultTo(10))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'servers_owner_id_index', 'servers', ['owner_id']);

      await db.schema
        .createTable('subusers')
        .addColumn('id', serialType, serial)
        .addColumn('server_id', uuidType, (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('user_id', uuidType, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('permissions', 'text', (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addUniqueConstraint('subusers_server_user_unique', ['server_id', 'user_id'])
        .execute();
      await createIndex(db, 'subusers_user_id_index', 'subusers', ['user_id']);

      await db.schema
        .createTable('backups')
        .addColumn('id', uuidType, (c) => c.primaryKey())
        .addColumn('server_id', uuidType, (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('ignored_files', 'text', (c) => c.notNull())
        .addColumn('disk', 'varchar(16)', (c) => c.notNull())
        .addColumn('sha256', 'varchar(64)')
        .addColumn('bytes', bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('is_successful', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_locked', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('completed_at', time)
        .execute();
      await createIndex(db, 'backups_server_created_index', 'backups', ['server_id', 'created_at']);

      await db.schema
        .createTable('activity_logs')
        .addColumn('id', serialType, serial)
        .addColumn('batch', uuidType, (c) => c.notNull())
        .addColumn('event', 'varchar(191)', (c) => c.notNull())
        .addColumn('ip', 'varchar(45)')
        .addColumn('actor_id', uuidType, (c) => c.references('users.id').onDelete('set null'))
        .addColumn('api_key_id', bigint)
        .addColumn('properties', 'text', (c) => c.notNull())
        .addColumn('timestamp', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'activity_logs_batch_index', 'activity_logs', ['batch']);
      await createIndex(db, 'activity_logs_actor_index', 'activity_logs', ['actor_id', 'timestamp']);

      // A feed reads the subjects table alone, in index order: (type, id, timestamp, log id).
      // The timestamp is copied here so that page N of a feed never touches other users' rows.
      await db.schema
        .createTable('activity_log_subjects')
        .addColumn('activity_log_id', bigint, (c) =>
          c.notNull().references('activity_logs.id').onDelete('cascade'),
        )
        .addColumn('subject_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('subject_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('timestamp', time, (c) => c.notNull())
        .addPrimaryKeyConstraint('activity_log_subjects_pk', [
          'activity_log_id',
          'subject_type',
          'subject_id',
        ])
        .execute();
      await createIndex(db, 'activity_log_subjects_feed_index', 'activity_log_subjects', [
        'subject_type',
        'subject_id',
        'timestamp',
        'activity_log_id',
      ]);

      await db.schema
        .createTable('jobs')
        .addColumn('id', serialType, serial)
        .addColumn('kind', 'varchar(64)', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('batch', uuidType, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('max_attempts', 'integer', (c) => c.notNull().defaultTo(3))
        .addColumn('run_at', time, (c) => c.notNull())
        .addColumn('lease_owner', 'varchar(191)')
        .addColumn('lease_expires_at', time)
        .addColumn('error', 'text')
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addColumn('finished_at', time)
        .execute();
      await createIndex(db, 'jobs_claim_index', 'jobs', ['state', 'run_at']);
      await createIndex(db, 'jobs_lease_index', 'jobs', ['state', 'lease_expires_at']);
    },

    async down(db: Kysely<unknown>): Promise<void> {
      for (const table of [
        'jobs',
        'activity_log_subjects',
        'activity_logs',
        'backups',
        'subusers',
        'servers',
        'sessions',
        'api_keys',
        'users',
      ]) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  };
}

import type { ColumnDefinitionBuilder, Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { flagDefault, flagType, timeType, uuidType } from '../column-types.ts';
import { createIndex } from '../create-index.ts';

type Column = (col: ColumnDefinitionBuilder) => ColumnDefinitionBuilder;

/**
 * Schedules and their tasks, as Pterodactyl keeps them (src/schedules/).
 *
 * - `schedules`: an integer id, the server's (deleted with it), the five cron fields as text,
 *   `is_active`, `is_processing`, `only_when_online`, `last_run_at`, `next_run_at`, and
 *   `run_job_id`, the job that carries the run in progress (null between runs).
 *   `schedules_due_index` (is_processing, is_active, next_run_at) serves the tick's one query
 *   (`is_processing = 0 and is_active = 1 and next_run_at <= now`, two equalities then a range)
 *   and the recovery of runs left processing (`is_processing = 1`).
 * - `schedule_tasks`: up to 10 a schedule (deleted with it), in `sequence_id` order. The index on
 *   (schedule_id, sequence_id) is not unique: moving a task shifts its neighbours one statement
 *   at a time.
 *
 * Flags and times take the engine's own types (`flagType`, `timeType`): this migration runs after
 * 2026_12_02_000000_postgres_types.
 */
export function schedulesMigration(kind: DatabaseKind) {
  const serialType = kind === 'postgres' ? 'bigserial' : kind === 'mysql' ? 'bigint' : 'integer';
  const serial: Column = (col) => (kind === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement());
  const bigint = kind === 'sqlite' ? 'integer' : 'bigint';
  const flag =
    (on: boolean): Column =>
    (col) =>
      col.notNull().defaultTo(flagDefault(kind, on));
  const time = timeType(kind);
  const cron = 'varchar(191)';

  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('schedules')
        .addColumn('id', serialType, serial)
        .addColumn('server_id', uuidType, (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('name', 'varchar(191)', (c) => c.notNull())
        .addColumn('cron_minute', cron, (c) => c.notNull())
        .addColumn('cron_hour', cron, (c) => c.notNull())
        .addColumn('cron_day_of_month', cron, (c) => c.notNull())
        .addColumn('cron_month', cron, (c) => c.notNull())
        .addColumn('cron_day_of_week', cron, (c) => c.notNull())
        .addColumn('is_active', flagType(kind), flag(true))
        .addColumn('is_processing', flagType(kind), flag(false))
        .addColumn('only_when_online', flagType(kind), flag(false))
        .addColumn('last_run_at', time)
        .addColumn('next_run_at', time)
        .addColumn('run_job_id', bigint)
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'schedules_due_index', 'schedules', [
        'is_processing',
        'is_active',
        'next_run_at',
      ]);
      await createIndex(db, 'schedules_server_id_index', 'schedules', ['server_id']);

      await db.schema
        .createTable('schedule_tasks')
        .addColumn('id', serialType, serial)
        .addColumn('schedule_id', bigint, (c) => c.notNull().references('schedules.id').onDelete('cascade'))
        .addColumn('sequence_id', 'integer', (c) => c.notNull())
        .addColumn('action', 'varchar(32)', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('time_offset', 'integer', (c) => c.notNull())
        .addColumn('is_queued', flagType(kind), flag(false))
        .addColumn('continue_on_failure', flagType(kind), flag(false))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'schedule_tasks_sequence_index', 'schedule_tasks', [
        'schedule_id',
        'sequence_id',
      ]);
    },

    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('schedule_tasks').ifExists().execute();
      await db.schema.dropTable('schedules').ifExists().execute();
    },
  };
}

import { sql, type Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/**
 * Gives every user a stable integer `id` beside their UUID, as the reference panel's account
 * endpoint shows it (typed clients decode it as an integer). The numbers come from an
 * auto-increment table, which every engine hands out without two writers ever getting the same
 * one; existing users are numbered in the order they were created.
 */
export function userNumbersMigration(kind: DatabaseKind) {
  const serialType = kind === 'postgres' ? 'serial' : 'integer';
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('user_numbers')
        .addColumn('id', serialType, (c) =>
          kind === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('user_id', 'varchar(36)', (c) => c.notNull().unique())
        .execute();
      await db.schema.alterTable('users').addColumn('number', 'integer').execute();

      const users = await sql<{ id: string }>`select id from users order by created_at, id`.execute(db);
      for (const { id } of users.rows) {
        await sql`insert into user_numbers (user_id) values (${id})`.execute(db);
        await sql`update users set number = (select n.id from user_numbers n where n.user_id = ${id}) where id = ${id}`.execute(
          db,
        );
      }
      await db.schema.createIndex('users_number_unique').on('users').column('number').unique().execute();
    },
  };
}

import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { uuidType } from '../column-types.ts';
import { createIndex } from '../create-index.ts';

/**
 * Two-factor authentication (TOTP) and the account endpoints it goes with:
 *
 * - `users.totp_secret`: the TOTP secret, encrypted under the app key; set while 2FA is being set
 *   up (pending) and while it is on. `users.totp_enabled_at`: when 2FA was turned on, null while
 *   it is off. `users.totp_last_step`: the 30-second step of the last code accepted, so that no
 *   code is taken twice. All nullable: existing users have 2FA off.
 * - `recovery_tokens`: the hashes of a user's unused recovery tokens (each works once).
 * - `login_checkpoints`: logins whose password was right and that wait for the second factor,
 *   by the SHA-256 of their confirmation token; each expires after 5 minutes and completes once.
 *
 * MariaDB gives the new tables the database's exact collation (see 2026_11_25_000000_exact_text),
 * and the new text columns take their table's.
 */
export function twoFactorMigration(kind: DatabaseKind) {
  const serialType = kind === 'postgres' ? 'bigserial' : kind === 'mysql' ? 'bigint' : 'integer';
  const time = 'varchar(24)';
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('users').addColumn('totp_secret', 'varchar(255)').execute();
      await db.schema.alterTable('users').addColumn('totp_enabled_at', time).execute();
      await db.schema.alterTable('users').addColumn('totp_last_step', 'integer').execute();

      await db.schema
        .createTable('recovery_tokens')
        .addColumn('id', serialType, (c) =>
          kind === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('user_id', uuidType, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('token_hash', 'varchar(255)', (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'recovery_tokens_user_id_index', 'recovery_tokens', ['user_id']);

      await db.schema
        .createTable('login_checkpoints')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_id', uuidType, (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await createIndex(db, 'login_checkpoints_user_id_index', 'login_checkpoints', ['user_id']);
      await createIndex(db, 'login_checkpoints_expires_at_index', 'login_checkpoints', ['expires_at']);
    },
  };
}

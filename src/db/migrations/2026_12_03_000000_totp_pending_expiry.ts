import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { timeType } from '../column-types.ts';

/**
 * `users.totp_pending_expires_at`: when the pending TOTP secret (set up, not yet confirmed)
 * stops being handed out. Until then, asking for a secret again gives the same one, so a request
 * cannot spoil a set-up under way; after it, the next request makes a new one. Null when no
 * secret is pending, and for a pending secret stored before this column (taken as expired).
 */
export function totpPendingExpiryMigration(kind: DatabaseKind) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('users').addColumn('totp_pending_expires_at', timeType(kind)).execute();
    },
  };
}

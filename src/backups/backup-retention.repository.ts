import type { Executor } from '../db/executor.ts';
import { keepFieldsOf, NO_POLICY, type RetentionPolicy } from './retention-policy.ts';
import type { BackupRetentionRow } from './backup.table.ts';

/** A server's saved retention policy, and when it was last set. */
export interface SavedRetention {
  policy: RetentionPolicy;
  updatedAt: string | null;
}

const count = (value: number | null): number | null => (value === null ? null : Number(value));

function toSaved(row: BackupRetentionRow | undefined): SavedRetention {
  if (row === undefined) return { policy: NO_POLICY, updatedAt: null };
  return {
    policy: {
      last: count(row.keep_last),
      hourly: count(row.keep_hourly),
      daily: count(row.keep_daily),
      weekly: count(row.keep_weekly),
      monthly: count(row.keep_monthly),
      yearly: count(row.keep_yearly),
    },
    updatedAt: row.updated_at,
  };
}

/** The retention policies of servers (`backup_retention`): one row per server that has one. */
export class BackupRetentionRepository {
  constructor(private readonly db: Executor) {}

  async find(serverId: string, db: Executor = this.db): Promise<SavedRetention> {
    const row = await db
      .selectFrom('backup_retention')
      .selectAll()
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    return toSaved(row);
  }

  /**
   * Writes a server's policy. Run it with the server's row held: the read and the write that
   * follows are then the only ones (a portable upsert, without each engine's own syntax).
   */
  async save(serverId: string, policy: RetentionPolicy, now: string, db: Executor): Promise<void> {
    const exists = await db
      .selectFrom('backup_retention')
      .select('server_id')
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    if (exists === undefined) {
      await db
        .insertInto('backup_retention')
        .values({ server_id: serverId, ...keepFieldsOf(policy), updated_at: now })
        .execute();
    } else {
      await db
        .updateTable('backup_retention')
        .set({ ...keepFieldsOf(policy), updated_at: now })
        .where('server_id', '=', serverId)
        .execute();
    }
  }
}

import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';

/** What reconciling backup storage reads beyond the backups themselves: servers, and live jobs. */
export class ReconcileRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Every server this database knows. */
  async serverIds(): Promise<Set<string>> {
    const rows = await this.db.selectFrom('servers').select('id').execute();
    return new Set(rows.map((row) => row.id));
  }

  /**
   * The backups a job is making or will make: those of `backup.create` jobs queued (a retry
   * waiting included) or running (a worker that died included: its job is taken up again once its
   * lease runs out). Few at any time.
   */
  async backupsBeingMade(): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select('payload')
      .where('kind', '=', 'backup.create')
      .where('state', 'in', ['queued', 'running'])
      .execute();
    return new Set(rows.map((row) => (JSON.parse(row.payload) as { backupId: string }).backupId));
  }
}

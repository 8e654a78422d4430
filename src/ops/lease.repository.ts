import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { updatedOne } from '../db/row-count.ts';

/** One row per periodic task (created by its migration): who runs it now, and until when. */
export interface MaintenanceLeaseTable {
  name: string;
  owner: string | null;
  expires_at: string;
}

type LeaseDatabase = Database & { maintenance_leases: MaintenanceLeaseTable };

/**
 * Leases on periodic tasks, so that of several processes that run one at the same time, one does
 * the work and the others skip it. Taking and renewing are one conditional UPDATE each, the same
 * on every engine: a lease is taken only when free, run out, or already the caller's.
 */
export class LeaseRepository {
  private readonly db: Kysely<LeaseDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db.withTables<{ maintenance_leases: MaintenanceLeaseTable }>();
  }

  /** Takes or renews `name` for `owner` until `until`; false when another owner holds it. */
  async take(name: string, owner: string, now: string, until: string): Promise<boolean> {
    return updatedOne(
      this.db
        .updateTable('maintenance_leases')
        .set({ owner, expires_at: until })
        .where('name', '=', name)
        .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '=', owner), eb('expires_at', '<', now)])),
    );
  }

  /** Gives `name` up, if `owner` still holds it. */
  async release(name: string, owner: string, now: string): Promise<void> {
    await this.db
      .updateTable('maintenance_leases')
      .set({ owner: null, expires_at: now })
      .where('name', '=', name)
      .where('owner', '=', owner)
      .execute();
  }
}

import { sql, type Kysely } from 'kysely';
import type { Database } from '../db/database.ts';

type StatusDatabase = Database & { aerie_migrations: { name: string; timestamp: string } };

/** The few cheap reads that health checks and metrics make. */
export class StatusRepository {
  private readonly db: Kysely<StatusDatabase>;

  constructor(db: Kysely<Database>) {
    this.db = db.withTables<{ aerie_migrations: { name: string; timestamp: string } }>();
  }

  /** One round trip to the database. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /** The names of the migrations the database has run. */
  async executedMigrations(): Promise<string[]> {
    const rows = await this.db.selectFrom('aerie_migrations').select('name').execute();
    return rows.map((row) => row.name);
  }

  /** How many jobs wait in the queue, by kind: one range of the claim index `(state, priority, run_at)`. */
  async queuedJobsByKind(): Promise<Map<string, number>> {
    const rows = await this.db
      .selectFrom('jobs')
      .select(['kind', (eb) => eb.fn.countAll<number>().as('n')])
      .where('state', '=', 'queued')
      .groupBy('kind')
      .execute();
    return new Map(rows.map((row) => [row.kind, Number(row.n)]));
  }
}

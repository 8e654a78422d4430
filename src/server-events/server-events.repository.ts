import type { Executor } from '../db/executor.ts';
import type { ServerStatus } from '../servers/server.table.ts';
import { toBackup, type Backup } from '../backups/backup.ts';

/** Ids per statement: well under every engine's limit on bound parameters. */
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** What the event streams read: for many servers at once, and little of each. */
export class ServerEventsRepository {
  constructor(private readonly db: Executor) {}

  /** The status of each of these servers that exists. */
  async statuses(serverIds: readonly string[]): Promise<Map<string, ServerStatus | null>> {
    const found = new Map<string, ServerStatus | null>();
    for (const ids of chunks(serverIds)) {
      const rows = await this.db
        .selectFrom('servers')
        .select(['id', 'status'])
        .where('id', 'in', ids)
        .execute();
      for (const row of rows) found.set(row.id, row.status);
    }
    return found;
  }

  /** Each backup of these servers, as its id and revision only. */
  async revisions(
    serverIds: readonly string[],
  ): Promise<{ id: string; serverId: string; revision: number }[]> {
    const found: { id: string; serverId: string; revision: number }[] = [];
    for (const ids of chunks(serverIds)) {
      const rows = await this.db
        .selectFrom('backups')
        .select(['id', 'server_id', 'revision'])
        .where('server_id', 'in', ids)
        .execute();
      for (const row of rows)
        found.push({ id: row.id, serverId: row.server_id, revision: Number(row.revision) });
    }
    return found;
  }

  /** These backups, whole (those that still exist). */
  async backups(ids: readonly string[]): Promise<Backup[]> {
    const found: Backup[] = [];
    for (const part of chunks(ids)) {
      const rows = await this.db.selectFrom('backups').selectAll().where('id', 'in', part).execute();
      found.push(...rows.map(toBackup));
    }
    return found;
  }
}

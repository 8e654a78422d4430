import type { Executor } from '../db/executor.ts';
import type { BackupRow } from '../servers/server.table.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class BackupRepository {
  constructor(private readonly db: Executor) {}

  /** A backup of this server, or nothing: a backup of another server is as good as unknown. */
  async findOfServer(
    serverId: string,
    backupId: string,
    db: Executor = this.db,
  ): Promise<BackupRow | undefined> {
    if (!UUID.test(backupId)) return undefined;
    const row = await db
      .selectFrom('backups')
      .selectAll()
      .where('id', '=', backupId.toLowerCase())
      .where('server_id', '=', serverId)
      .executeTakeFirst();
    return row && { ...row, bytes: Number(row.bytes) };
  }

  async insert(row: BackupRow, db: Executor = this.db): Promise<void> {
    await db.insertInto('backups').values(row).execute();
  }
}

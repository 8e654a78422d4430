import type { Executor } from '../db/executor.ts';
import { lockRow } from '../db/row-lock.ts';
import { updatedOne } from '../db/row-count.ts';
import type { ServerRow, ServerStatus, SubuserRow } from './server.table.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Numbers read as numbers whatever the driver hands back (PostgreSQL gives bigints as text). */
function toServer(row: ServerRow): ServerRow {
  return { ...row, disk_mb: Number(row.disk_mb), backup_limit: Number(row.backup_limit) };
}

export class ServerRepository {
  constructor(private readonly db: Executor) {}

  /** By UUID or by the 8-character short identifier. */
  async findByReference(reference: string, db: Executor = this.db): Promise<ServerRow | undefined> {
    const ref = reference.toLowerCase();
    const column = UUID.test(ref) ? 'id' : 'identifier';
    if (column === 'identifier' && !/^[0-9a-f]{8}$/.test(ref)) return undefined;
    const row = await db.selectFrom('servers').selectAll().where(column, '=', ref).executeTakeFirst();
    return row && toServer(row);
  }

  async insert(row: ServerRow, db: Executor = this.db): Promise<void> {
    await db.insertInto('servers').values(row).execute();
  }

  findSubuser(serverId: string, userId: string, db: Executor = this.db): Promise<SubuserRow | undefined> {
    return db
      .selectFrom('subusers')
      .selectAll()
      .where('server_id', '=', serverId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  /** Moves an idle server into `status`; false when it was not idle (someone else got there first). */
  async claimStatus(id: string, status: ServerStatus, now: string, db: Executor = this.db): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('servers')
        .set({ status, updated_at: now })
        .where('id', '=', id)
        .where('status', 'is', null),
    );
  }

  /** Returns a server in `status` to idle. */
  async releaseStatus(id: string, status: ServerStatus, now: string, db: Executor = this.db): Promise<void> {
    await db
      .updateTable('servers')
      .set({ status: null, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', status)
      .execute();
  }

  /** Every server, by UUID and identifier (for work over all of them: `backup prune`, `backup check`). */
  async all(): Promise<{ id: string; identifier: string }[]> {
    return this.db.selectFrom('servers').select(['id', 'identifier']).orderBy('created_at').execute();
  }

  /**
   * The servers a user may see in a listing: those they own or are a subuser of, or — for
   * `scope: 'all'` — every server. Ordered by creation, then id, so pages are stable.
   */
  private visible(userId: string, scope: 'owned' | 'mine' | 'all') {
    return this.db
      .selectFrom('servers')
      .$call((q) =>
        scope === 'all'
          ? q
          : scope === 'owned'
            ? q.where('owner_id', '=', userId)
            : q.where((eb) =>
                eb.or([
                  eb('owner_id', '=', userId),
                  eb('id', 'in', eb.selectFrom('subusers').select('server_id').where('user_id', '=', userId)),
                ]),
              ),
      );
  }

  async countVisible(userId: string, scope: 'owned' | 'mine' | 'all'): Promise<number> {
    const counted = await this.visible(userId, scope)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(counted.n);
  }

  /** A window of the servers `userId` may see (owned, owned or shared, or all), oldest first. */
  async listVisible(
    userId: string,
    scope: 'owned' | 'mine' | 'all',
    window: { limit: number; offset: number },
  ): Promise<ServerRow[]> {
    const rows = await this.visible(userId, scope)
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .limit(window.limit)
      .offset(window.offset)
      .execute();
    return rows.map(toServer);
  }

  /** The permissions of each of these servers' subusers who is `userId`. */
  async subuserPermissions(userId: string, serverIds: string[]): Promise<Map<string, string[]>> {
    if (serverIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('subusers')
      .select(['server_id', 'permissions'])
      .where('user_id', '=', userId)
      .where('server_id', 'in', serverIds)
      .execute();
    return new Map(rows.map((row) => [row.server_id, JSON.parse(row.permissions) as string[]]));
  }

  /** Writes a server's settings (`server update`). */
  async updateSettings(
    id: string,
    changes: Partial<Pick<ServerRow, 'name' | 'description' | 'disk_mb' | 'backup_limit'>>,
    now: string,
    db: Executor = this.db,
  ): Promise<void> {
    await db
      .updateTable('servers')
      .set({ ...changes, updated_at: now })
      .where('id', '=', id)
      .execute();
  }

  /** Holds the server's row for the rest of the transaction (see UserRepository.lock). */
  lock(id: string, db: Executor): Promise<void> {
    return lockRow(db, 'servers', id);
  }
}

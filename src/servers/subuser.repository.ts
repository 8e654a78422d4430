import type { Executor } from '../db/executor.ts';
import { deletedOne, updatedOne } from '../db/row-count.ts';
import { normalizePermissions, type Subuser } from './subuser.ts';

/** A subuser entry with the user it names. */
export interface SubuserDetailRow {
  id: number;
  server_id: string;
  user_id: string;
  /** JSON array of permission names. */
  permissions: string;
  created_at: string;
  username: string;
  email: string;
  user_created_at: string;
}

export class SubuserRepository {
  constructor(private readonly db: Executor) {}

  private details(db: Executor) {
    return db
      .selectFrom('subusers')
      .innerJoin('users', 'users.id', 'subusers.user_id')
      .select([
        'subusers.id',
        'subusers.server_id',
        'subusers.user_id',
        'subusers.permissions',
        'subusers.created_at',
        'users.username',
        'users.email',
        'users.created_at as user_created_at',
      ]);
  }

  /** A server's subusers, in the order they were added. */
  async listOfServer(serverId: string): Promise<Subuser[]> {
    const rows = await this.details(this.db)
      .where('subusers.server_id', '=', serverId)
      .orderBy('subusers.created_at')
      .orderBy('subusers.id')
      .execute();
    return rows.map(toSubuser);
  }

  async find(serverId: string, userId: string, db: Executor = this.db): Promise<Subuser | undefined> {
    const row = await this.details(db)
      .where('subusers.server_id', '=', serverId)
      .where('subusers.user_id', '=', userId)
      .executeTakeFirst();
    return row && toSubuser(row);
  }

  async insert(
    serverId: string,
    userId: string,
    permissions: readonly string[],
    now: string,
    db: Executor = this.db,
  ): Promise<void> {
    await db
      .insertInto('subusers')
      .values({
        server_id: serverId,
        user_id: userId,
        permissions: JSON.stringify(permissions),
        created_at: now,
        updated_at: now,
      })
      .execute();
  }

  /** False when the entry is gone (removed meanwhile). */
  async updatePermissions(
    id: number,
    permissions: readonly string[],
    now: string,
    db: Executor = this.db,
  ): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('subusers')
        .set({ permissions: JSON.stringify(permissions), updated_at: now })
        .where('id', '=', id),
    );
  }

  /** False when there was nothing to delete (someone else got there first). */
  async delete(id: number, db: Executor = this.db): Promise<boolean> {
    return deletedOne(db.deleteFrom('subusers').where('id', '=', id));
  }
}

function toSubuser(row: SubuserDetailRow): Subuser {
  const stored = JSON.parse(row.permissions) as unknown;
  const permissions = Array.isArray(stored) ? stored.filter((p): p is string => typeof p === 'string') : [];
  return {
    id: Number(row.id),
    serverId: row.server_id,
    user: { id: row.user_id, username: row.username, email: row.email, createdAt: row.user_created_at },
    permissions: normalizePermissions(permissions),
  };
}

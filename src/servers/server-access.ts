import type { Actor } from '../users/actor.ts';
import { ConflictError, NotFoundError } from '../shared/errors.ts';
import type { Permission } from './permissions.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerRow, ServerStatus } from './server.table.ts';

export interface ServerAccess {
  server: ServerRow;
  /** 'all' for the owner and administrators; a subuser's list otherwise. */
  permissions: 'all' | readonly string[];
}

/** Whether the caller holds `permission` on the server: owners and administrators hold them all. */
export function holds(access: ServerAccess, permission: Permission): boolean {
  return access.permissions === 'all' || access.permissions.includes(permission);
}

const CONFLICTS: Record<ServerStatus, string> = {
  install_failed: 'This server failed to install; it must be reinstalled before it can be used.',
  installing: 'This server has not yet completed its installation process, please try again later.',
  suspended: 'This server is currently suspended and the functionality requested is unavailable.',
  restoring_backup: 'This server is currently restoring from a backup, please try again later.',
  transferring: 'This server is currently being transferred to a new machine, please try again later.',
};

export function conflictFor(status: ServerStatus): ConflictError {
  return new ConflictError(CONFLICTS[status]);
}

/** Who may see and do what on a server. Someone who may not see it gets 404, never 403. */
export class ServerAccessService {
  constructor(private readonly servers: ServerRepository) {}

  async resolve(actor: Actor, reference: string): Promise<ServerAccess> {
    const server = await this.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError();
    if (actor.user.rootAdmin || server.owner_id === actor.user.id) return { server, permissions: 'all' };
    const subuser = await this.servers.findSubuser(server.id, actor.user.id);
    if (subuser === undefined) throw new NotFoundError();
    return { server, permissions: JSON.parse(subuser.permissions) as string[] };
  }

  /** Nothing may happen to a server's files while it installs, is suspended, restores or moves. */
  assertIdle(access: ServerAccess): void {
    if (access.server.status !== null) throw conflictFor(access.server.status);
  }
}

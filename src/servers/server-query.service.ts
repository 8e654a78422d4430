import type { Actor } from '../users/actor.ts';
import { loadPage, type Page } from '../shared/page.ts';
import type { ServerAccess } from './server-access.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerListQuery } from './server.schema.ts';

/** The list of servers a user may see. */
export class ServerQueryService {
  constructor(private readonly deps: { servers: ServerRepository }) {}

  private get servers(): ServerRepository {
    return this.deps.servers;
  }

  /**
   * The servers the caller owns or is a subuser of; administrators may ask for every server
   * (`type=admin`). Each comes with what the caller may do on it.
   */
  async list(actor: Actor, query: ServerListQuery): Promise<Page<ServerAccess>> {
    const { user } = actor;
    const scope =
      query.type === 'owner' ? 'owned' : user.rootAdmin && query.type !== undefined ? 'all' : 'mine';
    const page = await loadPage(
      query,
      () => this.servers.countVisible(user.id, scope),
      (window) => this.servers.listVisible(user.id, scope, window),
    );
    const subuserOf = await this.servers.subuserPermissions(
      user.id,
      page.items.filter((server) => server.owner_id !== user.id).map((server) => server.id),
    );
    const items = page.items.map((server): ServerAccess => ({
      server,
      permissions: server.owner_id === user.id || user.rootAdmin ? 'all' : (subuserOf.get(server.id) ?? []),
    }));
    return { ...page, items };
  }
}

import type { ActivityService } from '../activity/activity.service.ts';
import type { ActivityList, ActivityQuery } from '../activity/activity.schema.ts';
import { offsetOf, paginate, type PageUrl } from '../http/pagination.ts';
import type { Actor } from '../shared/context.ts';
import type { User } from '../users/user.ts';
import type { ServerAccessService } from './server-access.ts';
import type { ServerRepository } from './server.repository.ts';
import type { Account, ServerList, ServerListQuery, ServerResource } from './server.schema.ts';
import type { ServerRow } from './server.table.ts';

export function toServerResource(
  server: ServerRow,
  viewer: User,
  permissions: 'all' | readonly string[],
): ServerResource {
  const owner = server.owner_id === viewer.id;
  return {
    object: 'server',
    attributes: {
      server_owner: owner,
      identifier: server.identifier,
      uuid: server.id,
      name: server.name,
      description: server.description,
      status: server.status,
      is_suspended: server.status === 'suspended',
      is_installing: server.status === 'installing',
      is_transferring: server.status === 'transferring',
      limits: {
        memory: 0,
        swap: 0,
        disk: Number(server.disk_mb),
        io: 500,
        cpu: 0,
        threads: null,
        oom_disabled: true,
      },
      feature_limits: { databases: 0, allocations: 0, backups: server.backup_limit },
    },
    meta: { is_server_owner: owner, user_permissions: permissions === 'all' ? ['*'] : [...permissions] },
  };
}

export function toAccount(user: User): Account {
  return {
    object: 'user',
    attributes: {
      id: user.number,
      uuid: user.id,
      admin: user.rootAdmin,
      username: user.username,
      email: user.email,
      first_name: user.firstName,
      last_name: user.lastName,
      language: user.language,
    },
  };
}

/** What a user may read about servers: the list, one server, and a server's activity feed. */
export class ServerQueryService {
  constructor(
    private readonly servers: ServerRepository,
    private readonly access: ServerAccessService,
    private readonly activity: ActivityService,
  ) {}

  async list(actor: Actor, query: ServerListQuery, pageUrl?: PageUrl): Promise<ServerList> {
    const { user } = actor;
    const scope =
      query.type === 'owner' ? 'owned' : user.rootAdmin && query.type !== undefined ? 'all' : 'mine';
    const { total, rows } = await this.servers.listVisible(user.id, scope, {
      limit: query.per_page,
      offset: offsetOf(query.page, query.per_page),
    });
    const subuserOf = await this.servers.subuserPermissions(
      user.id,
      rows.filter((row) => row.owner_id !== user.id).map((row) => row.id),
    );
    const data = rows.map((row) =>
      toServerResource(
        row,
        user,
        row.owner_id === user.id || user.rootAdmin ? 'all' : (subuserOf.get(row.id) ?? []),
      ),
    );
    return {
      object: 'list',
      data,
      meta: { pagination: paginate(total, data.length, query.per_page, query.page, pageUrl) },
    };
  }

  async get(actor: Actor, reference: string): Promise<ServerResource> {
    const access = await this.access.resolve(actor, reference);
    return toServerResource(access.server, actor.user, access.permissions);
  }

  /** The server's feed: every entry about it. Needs `activity.read` from a subuser. */
  async activityFeed(
    actor: Actor,
    reference: string,
    query: ActivityQuery,
    pageUrl?: PageUrl,
  ): Promise<ActivityList> {
    const access = await this.access.resolve(actor, reference);
    this.access.assertCan(access, 'activity.read');
    return this.activity.list(actor, { type: 'server', id: access.server.id }, query, pageUrl);
  }
}

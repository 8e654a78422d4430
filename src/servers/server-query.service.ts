import type { BackupSummaryRepository } from '../backups/backup-summary.repository.ts';
import { summarizeBackups, type BackupSummary } from '../backups/backup-summary.ts';
import type { Actor } from '../users/actor.ts';
import { loadPage, type Page } from '../shared/page.ts';
import type { Clock } from '../shared/time.ts';
import { holds, type ServerAccess } from './server-access.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerListQuery } from './server.schema.ts';

/** A server as the list (and the single-server endpoint) shows it to one caller. */
export interface ListedServer extends ServerAccess {
  /** Its backups summed up; null when the caller may not read them (no `backup.read`). */
  backups: BackupSummary | null;
}

/** The list of servers a user may see. */
export class ServerQueryService {
  constructor(
    private readonly deps: { servers: ServerRepository; backups: BackupSummaryRepository; clock: Clock },
  ) {}

  private get servers(): ServerRepository {
    return this.deps.servers;
  }

  /**
   * The servers the caller owns or is a subuser of; administrators may ask for every server
   * (`type=admin`). Each comes with what the caller may do on it, and its backups summed up.
   */
  async list(actor: Actor, query: ServerListQuery): Promise<Page<ListedServer>> {
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
    const accesses = page.items.map((server): ServerAccess => ({
      server,
      permissions: server.owner_id === user.id || user.rootAdmin ? 'all' : (subuserOf.get(server.id) ?? []),
    }));
    return { ...page, items: await this.withBackups(accesses) };
  }

  /** One server the caller may see, as the list shows it. */
  async describe(access: ServerAccess): Promise<ListedServer> {
    const [listed] = await this.withBackups([access]);
    if (listed === undefined) throw new Error('withBackups lost the server');
    return listed;
  }

  /**
   * The servers, each with its backups summed up where the caller may read them: one query for
   * all of them, whatever their number.
   */
  private async withBackups(accesses: ServerAccess[]): Promise<ListedServer[]> {
    const readable = new Set(
      accesses.filter((access) => holds(access, 'backup.read')).map((access) => access.server.id),
    );
    const totals = await this.deps.backups.totalsFor([...readable]);
    const now = this.deps.clock();
    return accesses.map((access) => ({
      ...access,
      backups: readable.has(access.server.id) ? summarizeBackups(totals.get(access.server.id), now) : null,
    }));
  }
}

import type { ModuleContext } from '../module-context.ts';
import type { ServersModule } from '../servers/servers.module.ts';
import { ServerEventsRepository } from './server-events.repository.ts';
import { ServerEventsService } from './server-events.service.ts';

/** What the event streams show: servers' status and their backups' progress, as it changes. */
export function createServerEventsModule({ config, db, logger }: ModuleContext, servers: ServersModule) {
  return {
    serverEvents: new ServerEventsService({
      repository: new ServerEventsRepository(db.kysely),
      changes: servers.changes,
      intervalMs: config.progressIntervalMs,
      logger,
    }),
  };
}

import type { ActivityService } from '../activity/activity.service.ts';
import { BackupSummaryRepository } from '../backups/backup-summary.repository.ts';
import type { ModuleContext } from '../module-context.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { ServerAccessService } from './server-access.ts';
import { ServerChanges } from './server-changes.ts';
import { ServerQueryService } from './server-query.service.ts';
import { ServerRepository } from './server.repository.ts';
import { ServerService } from './server.service.ts';
import { SubuserRepository } from './subuser.repository.ts';
import { SubuserService } from './subuser.service.ts';

/** Servers, who may reach them (owners, subusers), and the hint that one of them changed. */
export function createServersModule(
  { config, db, transaction, clock }: ModuleContext,
  { users, activity }: { users: UserRepository; activity: ActivityService },
) {
  const repository = new ServerRepository(db.kysely);
  return {
    repository,
    servers: new ServerService({ servers: repository, users, clock, volumesDir: config.volumesDir }),
    serverQueries: new ServerQueryService({
      servers: repository,
      backups: new BackupSummaryRepository(db.kysely),
      clock,
    }),
    access: new ServerAccessService(repository),
    subusers: new SubuserService({
      subusers: new SubuserRepository(db.kysely),
      servers: repository,
      users,
      activity,
      transaction,
      clock,
    }),
    /** Changes to backups and restores made in this process reach its event streams at once. */
    changes: new ServerChanges(),
  };
}

export type ServersModule = ReturnType<typeof createServersModule>;

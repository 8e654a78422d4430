import type { ModuleContext } from '../module-context.ts';
import { ActivityRepository } from './activity.repository.ts';
import { ActivityService } from './activity.service.ts';

/** The activity log: every module records through `activity`; retention prunes `repository`. */
export function createActivityModule({ db, clock }: ModuleContext) {
  const repository = new ActivityRepository(db.kysely, db.kind);
  return { repository, activity: new ActivityService(repository, clock) };
}

export type ActivityModule = ReturnType<typeof createActivityModule>;

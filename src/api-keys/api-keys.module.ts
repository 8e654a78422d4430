import type { ActivityService } from '../activity/activity.service.ts';
import type { ModuleContext } from '../module-context.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { ApiKeyRepository } from './api-key.repository.ts';
import { ApiKeyService } from './api-key.service.ts';

export function createApiKeysModule(
  { db, transaction, clock }: ModuleContext,
  { users, activity }: { users: UserRepository; activity: ActivityService },
) {
  const apiKeys = new ApiKeyService({
    keys: new ApiKeyRepository(db.kysely, db.kind),
    users,
    activity,
    transaction,
    clock,
  });
  return { apiKeys };
}

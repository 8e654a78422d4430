import type { ModuleContext } from '../module-context.ts';
import { UserRepository } from './user.repository.ts';
import { UserService } from './user.service.ts';

/** Users: the accounts every other module refers to. */
export function createUsersModule({ db, clock }: ModuleContext) {
  const repository = new UserRepository(db.kysely, db.kind);
  return { repository, users: new UserService(repository, clock) };
}

export type UsersModule = ReturnType<typeof createUsersModule>;

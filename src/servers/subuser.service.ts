import type { ActivityService } from '../activity/activity.service.ts';
import type { Subject } from '../activity/activity.repository.ts';
import type { Transactor } from '../db/executor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import {
  BadRequestError,
  DisplayError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { UserRepository } from '../users/user.repository.ts';
import type { UserRow } from '../users/user.table.ts';
import { isPermission } from './permissions.ts';
import type { ServerAccess } from './server-access.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerRow } from './server.table.ts';
import type { SubuserRepository } from './subuser.repository.ts';
import type { CreateSubuserBody, UpdateSubuserBody } from './subuser.schema.ts';
import { normalizePermissions, type Subuser } from './subuser.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Subuser entries are about the server and about the user: they reach both feeds. */
function subjectsOf(serverId: string, userId: string): Subject[] {
  return [
    { type: 'server', id: serverId },
    { type: 'user', id: userId },
  ];
}

const ALREADY_SUBUSER = 'A user with that email address is already assigned as a subuser for this server.';
const IS_OWNER = 'You cannot add the server owner as a subuser for this server.';

export interface SubuserServiceDeps {
  subusers: SubuserRepository;
  servers: ServerRepository;
  users: UserRepository;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
}

/**
 * Who else may use a server, and with which permissions. The checks run in the order of the rest
 * of the API: visibility (404), the caller's `user.*` permission (403), the subuser named in the
 * path (404), the body (422), then what the body asks for (403, 422, 400).
 */
export class SubuserService {
  constructor(private readonly deps: SubuserServiceDeps) {}

  /** A server's subusers, in the order they were added. */
  list(access: ServerAccess): Promise<Subuser[]> {
    return this.deps.subusers.listOfServer(access.server.id);
  }

  /** The subuser of a server that a path names by user UUID, if there is one. */
  find(serverId: string, userRef: string): Promise<Subuser | undefined> {
    if (!UUID.test(userRef)) return Promise.resolve(undefined);
    return this.deps.subusers.find(serverId, userRef.toLowerCase());
  }

  /** Adds an existing user (by email) as a subuser. Aerie sends no invitations. */
  async create(
    context: AuthenticatedContext,
    access: ServerAccess,
    body: CreateSubuserBody,
  ): Promise<Subuser> {
    const permissions = normalizePermissions(body.permissions);
    this.assertMayGrant(access, [], permissions);
    const email = body.email.trim().toLowerCase();
    const user = await this.deps.users.findByLogin(email);
    // The look-up also matches usernames; only a user whose email it is counts.
    if (user === undefined || user.email.toLowerCase() !== email) {
      throw new ValidationError([
        { field: 'email', rule: 'exists', message: 'No user with that email address exists.' },
      ]);
    }
    if (user.id === access.server.owner_id) throw new DisplayError(IS_OWNER);
    return this.add(context, context.actor, access.server, user, permissions);
  }

  async update(
    context: AuthenticatedContext,
    access: ServerAccess,
    subuser: Subuser,
    body: UpdateSubuserBody,
  ): Promise<Subuser> {
    const permissions = normalizePermissions(body.permissions);
    this.assertMayGrant(access, subuser.permissions, permissions);
    return this.change(context, context.actor, subuser, permissions);
  }

  async delete(context: AuthenticatedContext, subuser: Subuser): Promise<void> {
    await this.deps.transaction(async (trx) => {
      if (!(await this.deps.subusers.delete(subuser.id, trx))) throw new NotFoundError();
      await this.deps.activity.record(
        context,
        {
          event: 'server:subuser.delete',
          actor: context.actor,
          properties: { email: subuser.user.email },
          subjects: subjectsOf(subuser.serverId, subuser.user.id),
        },
        trx,
      );
    });
  }

  /**
   * The CLI's `server add-subuser`: makes a user (by username or email) a subuser with exactly
   * these permissions, adding or changing the entry. Recorded with no actor (the system).
   */
  async setByLogin(context: RequestContext, serverRef: string, login: string, permissions: string[]) {
    const server = await this.deps.servers.findByReference(serverRef);
    if (server === undefined) throw new NotFoundError(`No server "${serverRef}".`);
    const user = await this.deps.users.findByLogin(login);
    if (user === undefined) throw new NotFoundError(`No user "${login}".`);
    if (user.id === server.owner_id)
      throw new BadRequestError('The owner of a server cannot be its subuser.');
    const unknown = permissions.filter((p) => !isPermission(p));
    if (unknown.length > 0) throw new BadRequestError(`Unknown permissions: ${unknown.join(', ')}.`);
    const wanted = normalizePermissions(permissions);
    const existing = await this.deps.subusers.find(server.id, user.id);
    const result = existing
      ? await this.change(context, null, existing, wanted)
      : await this.add(context, null, server, user, wanted);
    return { server: server.id, user: user.id, permissions: result.permissions };
  }

  /**
   * A subuser may not grant what they do not hold. Permissions the entry already has are not
   * being granted, so keeping them is allowed (the reference panel also refuses those, which
   * stops a subuser from changing anything about a better-endowed one).
   */
  private assertMayGrant(access: ServerAccess, current: readonly string[], next: readonly string[]): void {
    if (access.permissions === 'all') return;
    const held = access.permissions;
    const granted = next.filter((p) => !current.includes(p));
    if (granted.some((p) => !held.includes(p))) {
      throw new ForbiddenError(
        'Cannot assign permissions to a subuser that your account does not actively possess.',
      );
    }
  }

  private async add(
    context: RequestContext,
    actor: Actor | null,
    server: ServerRow,
    user: UserRow,
    permissions: string[],
  ): Promise<Subuser> {
    if ((await this.deps.subusers.find(server.id, user.id)) !== undefined)
      throw new DisplayError(ALREADY_SUBUSER);
    const now = toStoredTime(this.deps.clock());
    try {
      await this.deps.transaction(async (trx) => {
        await this.deps.subusers.insert(server.id, user.id, permissions, now, trx);
        await this.deps.activity.record(
          context,
          {
            event: 'server:subuser.create',
            actor,
            properties: { email: user.email, permissions },
            subjects: subjectsOf(server.id, user.id),
          },
          trx,
        );
      });
    } catch (error) {
      // Two requests adding the same user at once: the unique index lets exactly one through.
      if ((await this.deps.subusers.find(server.id, user.id)) !== undefined)
        throw new DisplayError(ALREADY_SUBUSER);
      throw error;
    }
    const added = await this.deps.subusers.find(server.id, user.id);
    if (added === undefined) throw new NotFoundError();
    return added;
  }

  /** Replaces the entry's permissions; nothing is written or recorded when they are the same. */
  private async change(
    context: RequestContext,
    actor: Actor | null,
    subuser: Subuser,
    permissions: string[],
  ): Promise<Subuser> {
    const old = subuser.permissions;
    if (old.length === permissions.length && old.every((p, i) => p === permissions[i])) return subuser;
    await this.deps.transaction(async (trx) => {
      const updated = await this.deps.subusers.updatePermissions(
        subuser.id,
        permissions,
        toStoredTime(this.deps.clock()),
        trx,
      );
      if (!updated) throw new NotFoundError();
      await this.deps.activity.record(
        context,
        {
          event: 'server:subuser.update',
          actor,
          properties: { email: subuser.user.email, permissions, old_permissions: old },
          subjects: subjectsOf(subuser.serverId, subuser.user.id),
        },
        trx,
      );
    });
    return { ...subuser, permissions };
  }
}

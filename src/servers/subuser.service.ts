import { createHash } from 'node:crypto';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Subject } from '../activity/activity.repository.ts';
import type { Transactor } from '../db/executor.ts';
import type { Actor, AuthenticatedContext, RequestContext } from '../shared/context.ts';
import {
  BadRequestError,
  DisplayError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
  type FieldError,
} from '../shared/errors.ts';
import { toStoredTime, toWireTime, type Clock } from '../shared/time.ts';
import type { UserRepository } from '../users/user.repository.ts';
import type { UserRow } from '../users/user.table.ts';
import { isPermission } from './permissions.ts';
import type { ServerAccess, ServerAccessService } from './server-access.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerRow } from './server.table.ts';
import type { SubuserDetailRow, SubuserRepository } from './subuser.repository.ts';
import type {
  CreateSubuserBody,
  SubuserList,
  SubuserParams,
  SubuserResource,
  UpdateSubuserBody,
} from './subuser.schema.ts';

/** A user's place on a server they do not own, with what they may do there. */
export interface Subuser {
  id: number;
  serverId: string;
  user: { id: string; username: string; email: string; createdAt: string };
  /** Sorted, without duplicates. */
  permissions: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Sorted, each once: the form permissions are stored, compared and recorded in. */
function normalize(permissions: readonly string[]): string[] {
  return [...new Set(permissions)].sort();
}

function toSubuser(row: SubuserDetailRow): Subuser {
  const stored = JSON.parse(row.permissions) as unknown;
  const permissions = Array.isArray(stored) ? stored.filter((p): p is string => typeof p === 'string') : [];
  return {
    id: row.id,
    serverId: row.server_id,
    user: { id: row.user_id, username: row.username, email: row.email, createdAt: row.user_created_at },
    permissions: normalize(permissions),
  };
}

export function toSubuserResource(subuser: Subuser): SubuserResource {
  const { user } = subuser;
  return {
    object: 'server_subuser',
    attributes: {
      uuid: user.id,
      username: user.username,
      email: user.email,
      image: `https://gravatar.com/avatar/${createHash('md5').update(user.email.trim().toLowerCase()).digest('hex')}`,
      '2fa_enabled': false,
      created_at: toWireTime(user.createdAt),
      permissions: [...subuser.permissions],
    },
  };
}

/** Subuser entries are about the server and about the user: they reach both feeds. */
function subjectsOf(serverId: string, userId: string): Subject[] {
  return [
    { type: 'server', id: serverId },
    { type: 'user', id: userId },
  ];
}

const ALREADY_SUBUSER = 'A user with that email address is already assigned as a subuser for this server.';
const IS_OWNER = 'You cannot add the server owner as a subuser for this server.';

/**
 * Who else may use a server, and with which permissions. The checks run in the order of the rest
 * of the API: visibility (404), the caller's `user.*` permission (403), the subuser named in the
 * path (404), the body (422), then what the body asks for (403, 422, 400).
 */
export class SubuserService {
  constructor(
    private readonly subusers: SubuserRepository,
    private readonly servers: ServerRepository,
    private readonly users: UserRepository,
    private readonly access: ServerAccessService,
    private readonly activity: ActivityService,
    private readonly transaction: Transactor,
    private readonly clock: Clock,
  ) {}

  async list(actor: Actor, serverRef: string): Promise<SubuserList> {
    const access = await this.access.resolve(actor, serverRef);
    this.access.assertCan(access, 'user.read');
    const rows = await this.subusers.listOfServer(access.server.id);
    return { object: 'list', data: rows.map((row) => toSubuserResource(toSubuser(row))) };
  }

  async get(actor: Actor, params: SubuserParams): Promise<SubuserResource> {
    const access = await this.access.resolve(actor, params.server);
    this.access.assertCan(access, 'user.read');
    return toSubuserResource(await this.findOrFail(access.server.id, params.user));
  }

  /** Adds an existing user (by email) as a subuser. Aerie sends no invitations. */
  async create(
    context: AuthenticatedContext,
    serverRef: string,
    body: CreateSubuserBody,
    bodyErrors: FieldError[] | null,
  ): Promise<SubuserResource> {
    const access = await this.access.resolve(context.actor, serverRef);
    this.access.assertCan(access, 'user.create');
    if (bodyErrors !== null) throw new ValidationError(bodyErrors);
    const permissions = normalize(body.permissions);
    this.assertMayGrant(access, [], permissions);
    const email = body.email.trim().toLowerCase();
    const user = await this.users.findByLogin(email);
    // The look-up also matches usernames; only a user whose email it is counts.
    if (user === undefined || user.email.toLowerCase() !== email) {
      throw new ValidationError([
        { field: 'email', rule: 'exists', message: 'No user with that email address exists.' },
      ]);
    }
    if (user.id === access.server.owner_id) throw new DisplayError(IS_OWNER);
    return toSubuserResource(await this.add(context, context.actor, access.server, user, permissions));
  }

  async update(
    context: AuthenticatedContext,
    params: SubuserParams,
    body: UpdateSubuserBody,
    bodyErrors: FieldError[] | null,
  ): Promise<SubuserResource> {
    const access = await this.access.resolve(context.actor, params.server);
    this.access.assertCan(access, 'user.update');
    const subuser = await this.findOrFail(access.server.id, params.user);
    this.assertNotSelf(context.actor, subuser);
    if (bodyErrors !== null) throw new ValidationError(bodyErrors);
    const permissions = normalize(body.permissions);
    this.assertMayGrant(access, subuser.permissions, permissions);
    return toSubuserResource(await this.change(context, context.actor, subuser, permissions));
  }

  async delete(context: AuthenticatedContext, params: SubuserParams): Promise<void> {
    const access = await this.access.resolve(context.actor, params.server);
    this.access.assertCan(access, 'user.delete');
    const subuser = await this.findOrFail(access.server.id, params.user);
    this.assertNotSelf(context.actor, subuser);
    await this.transaction(async (trx) => {
      if (!(await this.subusers.delete(subuser.id, trx))) throw new NotFoundError();
      await this.activity.record(
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
    const server = await this.servers.findByReference(serverRef);
    if (server === undefined) throw new NotFoundError(`No server "${serverRef}".`);
    const user = await this.users.findByLogin(login);
    if (user === undefined) throw new NotFoundError(`No user "${login}".`);
    if (user.id === server.owner_id)
      throw new BadRequestError('The owner of a server cannot be its subuser.');
    const unknown = permissions.filter((p) => !isPermission(p));
    if (unknown.length > 0) throw new BadRequestError(`Unknown permissions: ${unknown.join(', ')}.`);
    const wanted = normalize(permissions);
    const existing = await this.subusers.find(server.id, user.id);
    const result = existing
      ? await this.change(context, null, toSubuser(existing), wanted)
      : await this.add(context, null, server, user, wanted);
    return { server: server.id, user: user.id, permissions: result.permissions };
  }

  private async findOrFail(serverId: string, userRef: string): Promise<Subuser> {
    const row = UUID.test(userRef) ? await this.subusers.find(serverId, userRef.toLowerCase()) : undefined;
    if (row === undefined) throw new NotFoundError();
    return toSubuser(row);
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

  /**
   * Nobody changes or removes their own subuser entry: a 403, as the reference panel answers
   * (its request authorization fails), rather than a 400, because it is a matter of permission,
   * not of a malformed request. Reading one's own entry is allowed.
   */
  private assertNotSelf(actor: Actor, subuser: Subuser): void {
    if (subuser.user.id === actor.user.id) {
      throw new ForbiddenError('Editing your own subuser account is not permitted.');
    }
  }

  private async add(
    context: RequestContext,
    actor: Actor | null,
    server: ServerRow,
    user: UserRow,
    permissions: string[],
  ): Promise<Subuser> {
    if ((await this.subusers.find(server.id, user.id)) !== undefined) throw new DisplayError(ALREADY_SUBUSER);
    const now = toStoredTime(this.clock());
    try {
      await this.transaction(async (trx) => {
        await this.subusers.insert(server.id, user.id, permissions, now, trx);
        await this.activity.record(
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
      if ((await this.subusers.find(server.id, user.id)) !== undefined)
        throw new DisplayError(ALREADY_SUBUSER);
      throw error;
    }
    const added = await this.subusers.find(server.id, user.id);
    if (added === undefined) throw new NotFoundError();
    return toSubuser(added);
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
    await this.transaction(async (trx) => {
      const updated = await this.subusers.updatePermissions(
        subuser.id,
        permissions,
        toStoredTime(this.clock()),
        trx,
      );
      if (!updated) throw new NotFoundError();
      await this.activity.record(
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

import type { FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import type { Backup } from '../backups/backup.ts';
import type { Permission } from '../servers/permissions.ts';
import type { ServerAccess, ServerAccessService } from '../servers/server-access.ts';
import type { Subuser } from '../servers/subuser.ts';
import { ForbiddenError, NotAuthenticatedError, NotFoundError } from '../shared/errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The server the path names, and what the caller may do on it; set by `serverAccess`. */
    serverAccess: ServerAccess | null;
    /** The backup the path names, once `backupOf` found it on that server. */
    backup: Backup | null;
    /** The subuser entry the path names, once `subuserOf` found it on that server. */
    subuser: Subuser | null;
  }
}

/** One check of a server-scoped request, run in the order the route lists them. */
export type AccessStep = (access: ServerAccess, request: FastifyRequest) => void | Promise<void>;

/**
 * A `preValidation` hook for routes under `/api/client/servers/{server}`: it finds the server
 * (404 when it is unknown or not the caller's), then runs the route's steps in order — each a
 * 404, 409 or 403 — before the query or body is validated. So a refusal never depends on what
 * the request carried, in the order the reference panel answers, and handlers receive the
 * resolved server (and backup or subuser) with input already valid.
 */
export function serverAccess(
  servers: ServerAccessService,
  ...steps: AccessStep[]
): preValidationAsyncHookHandler {
  return async (request) => {
    if (request.actor === null) throw new NotAuthenticatedError();
    // A path that fails its schema (an id too long to be any) names nothing, whoever asks.
    if (!request.validateInput(request.params, 'params')) throw new NotFoundError();
    const { server } = request.params as { server?: unknown };
    if (typeof server !== 'string') throw new NotFoundError();
    const access = await servers.resolve(request.actor, server);
    for (const step of steps) await step(access, request);
    request.serverAccess = access;
  };
}

/** 403 unless the caller holds `permission` on the server. */
export const can =
  (permission: Permission): AccessStep =>
  (access) => {
    if (access.permissions !== 'all' && !access.permissions.includes(permission)) throw new ForbiddenError();
  };

/** 409 while the server installs, is suspended, restores a backup or moves. */
export const idle =
  (servers: ServerAccessService): AccessStep =>
  (access) =>
    servers.assertIdle(access);

/**
 * 404 unless the path parameter `param` names something `find` finds on this server; what it
 * finds is kept on the request for the handler.
 */
function pathResource<T>(
  param: 'backup' | 'user',
  find: (serverId: string, reference: string) => Promise<T | undefined>,
  keep: (request: FastifyRequest, found: T) => void,
): AccessStep {
  return async (access, request) => {
    const reference = (request.params as Record<string, unknown>)[param];
    const found = typeof reference === 'string' ? await find(access.server.id, reference) : undefined;
    if (found === undefined) throw new NotFoundError();
    keep(request, found);
  };
}

/** 404 unless the path's `{backup}` is one of this server's backups. */
export const backupOf = (find: (serverId: string, reference: string) => Promise<Backup | undefined>) =>
  pathResource('backup', find, (request, backup) => (request.backup = backup));

/** 404 unless the path's `{user}` is a subuser of this server. */
export const subuserOf = (find: (serverId: string, reference: string) => Promise<Subuser | undefined>) =>
  pathResource('user', find, (request, subuser) => (request.subuser = subuser));

/**
 * 403 when the subuser entry is the caller's own: nobody changes or removes their own entry (a
 * matter of permission, as the reference panel answers it, not of a malformed request).
 */
export const notOwnEntry: AccessStep = (_access, request) => {
  if (request.subuser?.user.id === request.actor?.user.id) {
    throw new ForbiddenError('Editing your own subuser account is not permitted.');
  }
};

/** What a handler behind `serverAccess` is given; throws if the route forgot the hook. */
export function accessOf(request: FastifyRequest): ServerAccess {
  if (request.serverAccess === null) throw new Error(`${request.routeOptions.url} has no serverAccess hook`);
  return request.serverAccess;
}

export function backupOfRequest(request: FastifyRequest): Backup {
  if (request.backup === null) throw new Error(`${request.routeOptions.url} has no backupOf step`);
  return request.backup;
}

export function subuserOfRequest(request: FastifyRequest): Subuser {
  if (request.subuser === null) throw new Error(`${request.routeOptions.url} has no subuserOf step`);
  return request.subuser;
}

import type { FastifyRequest } from 'fastify';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { NotAuthenticatedError } from '../shared/errors.ts';
import { normalizeIp } from '../shared/ip.ts';
import { linkTo, pageLinks } from './links.ts';
import type { LinkBase, PageUrl } from './links.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on `/api/client` routes. */
    actor: Actor | null;
    /** AERIE_PUBLIC_URL, the same on every request (decorated by `buildApp`). */
    publicUrl: string | null;
  }
}

/** The request's id doubles as its activity batch: the two name the same thing. */
export function contextOf(request: FastifyRequest): RequestContext {
  return {
    batch: request.id,
    ip: normalizeIp(request.ip),
    userAgent: request.headers['user-agent'] ?? '',
  };
}

export function authenticatedContextOf(request: FastifyRequest): AuthenticatedContext {
  if (request.actor === null) throw new NotAuthenticatedError();
  return { ...contextOf(request), actor: request.actor };
}

/** What this request's links are rooted on (see `linkTo`). */
function linkBaseOf(request: FastifyRequest): LinkBase {
  return { publicUrl: request.publicUrl, protocol: request.protocol, host: request.host };
}

/** An absolute link to one of Aerie's paths for this request's client (relative when it cannot be). */
export function linkOf(request: FastifyRequest, pathAndQuery: string): string {
  return linkTo(linkBaseOf(request), pathAndQuery);
}

/** Links to other pages of the listing this request asked for, for `meta.pagination.links`. */
export function pageUrlOf(request: FastifyRequest): PageUrl {
  return pageLinks({ ...linkBaseOf(request), target: request.url });
}

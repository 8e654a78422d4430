import type { FastifyRequest } from 'fastify';
import type { Actor, AuthenticatedContext, RequestContext } from '../shared/context.ts';
import { NotAuthenticatedError } from '../shared/errors.ts';
import { normalizeIp } from '../shared/ip.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on `/api/client` routes. */
    actor: Actor | null;
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

/** An absolute URL of the same listing at another page, for `meta.pagination.links`. */
export function pageUrlOf(request: FastifyRequest): (page: number) => string {
  return (page) => {
    const url = new URL(request.url, `${request.protocol}://${request.host}`);
    url.searchParams.set('page', String(page));
    return url.toString();
  };
}

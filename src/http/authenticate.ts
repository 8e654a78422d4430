import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import type { RequestContext } from '../shared/context.ts';
import { ForbiddenError, NotAuthenticatedError } from '../shared/errors.ts';
import type { Actor } from '../users/actor.ts';
import { contextOf } from './request-context.ts';

export const SESSION_COOKIE = 'aerie_session';

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A browser's state-changing request made from another site's page is refused (CSRF): its
 * `Origin` names another host, or, when it sends no `Origin`, its `Sec-Fetch-Site` says
 * `cross-site` or `same-site` (a sibling subdomain). Clients that send neither (curl, scripts)
 * are not browsers and pass.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const refuse = () => new ForbiddenError('This request comes from another site.');
  const origin = request.headers.origin;
  if (origin === undefined) {
    const site = request.headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') throw refuse();
    return;
  }
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw refuse();
  }
  if (host !== request.host) throw refuse();
}

/** What a request authenticates with: a bearer API key, or the session cookie. */
export interface Credential {
  kind: 'key' | 'session';
  token: string;
}

/**
 * The request's credential: a bearer API key (the scheme name in any case), else the session
 * cookie. None when the request carries neither, or when its `Authorization` header is not a
 * bearer token (the cookie is then not looked at).
 */
export function credentialOf(request: FastifyRequest): Credential | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const token = /^bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    return token === undefined ? undefined : { kind: 'key', token };
  }
  const session = readCookie(request, SESSION_COOKIE);
  return session === undefined ? undefined : { kind: 'session', token: session };
}

/** Who the credential authenticates (401, or 403 for a key used from an address it may not be). */
export function authenticateCredential(
  services: Pick<Services, 'apiKeys' | 'sessions'>,
  credential: Credential,
  context: RequestContext,
): Promise<Actor> {
  return credential.kind === 'key'
    ? services.apiKeys.authenticate(credential.token, context)
    : services.sessions.authenticate(credential.token);
}

/**
 * Authenticates every request of the scope it is added to: a bearer API key (the scheme name
 * in any case), else the session cookie. Runs before the body is read or validated, so an
 * anonymous request gets 401 whatever it carries.
 */
export function requireAuthentication(
  app: FastifyInstance,
  services: Pick<Services, 'apiKeys' | 'sessions'>,
): void {
  app.addHook('onRequest', async (request) => {
    const credential = credentialOf(request);
    if (credential === undefined) throw new NotAuthenticatedError();
    request.actor = await authenticateCredential(services, credential, contextOf(request));
    if (credential.kind === 'session') assertSameOrigin(request);
  });
}

import type { LightMyRequestResponse } from 'fastify';

/** The `name=value` part of the session cookie a response sets. */
export function sessionCookieOf(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  const value = Array.isArray(header) ? header[0] : header;
  return String(value).split(';')[0] ?? '';
}

import type { FastifyInstance } from 'fastify';

/**
 * Answers are private unless they say otherwise: a response that sets no `Cache-Control` of its
 * own gets `no-store`, so no browser, proxy or shared cache keeps what a request returned (a
 * TOTP secret, recovery tokens, a signed download link, the session cookie of a login), errors
 * included. The panel's page and assets set their own caching (see panel.ts) and keep it.
 */
export function installNoStoreDefault(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done();
  });
}

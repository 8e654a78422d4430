import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  CompleteLoginSchema,
  LoginBodySchema,
  LoginCheckpointBodySchema,
  LoginResponseSchema,
} from '../../auth/auth.schema.ts';
import type { LoginResult } from '../../auth/session.service.ts';
import type { Services } from '../../services.ts';
import { SESSION_COOKIE, assertSameOrigin, requireAuthentication } from '../authenticate.ts';
import { authenticatedContextOf, contextOf } from '../request-context.ts';

function sessionCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  const parts = [
    `${SESSION_COOKIE}=${value}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
  ];
  if (secure) parts.push('Secure');
  return parts.join('; ');
}

/** The login's answer, with the session cookie once there is a session. */
function answerLogin<R extends LoginResult>(
  request: FastifyRequest,
  reply: FastifyReply,
  result: R,
): R['response'] {
  if (result.session !== null) {
    const { token, maxAgeSeconds } = result.session;
    reply.header('set-cookie', sessionCookie(token, maxAgeSeconds, request.protocol === 'https'));
  }
  return result.response;
}

export function authRoutes(app: FastifyInstance, services: Pick<Services, 'sessions' | 'apiKeys'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  // A login from another site's page would sign the browser into someone else's account.
  typed.post(
    '/auth/login',
    {
      onRequest: (request) => Promise.resolve(request).then(assertSameOrigin),
      schema: {
        tags: ['auth'],
        summary:
          'Log in with a username or email and a password; sets the session cookie, or, with ' +
          'two-factor authentication, answers complete: false and a confirmation_token',
        body: LoginBodySchema,
        response: { 200: LoginResponseSchema },
      },
    },
    async (request, reply) =>
      answerLogin(request, reply, await services.sessions.login(contextOf(request), request.body)),
  );

  typed.post(
    '/auth/login/checkpoint',
    {
      onRequest: (request) => Promise.resolve(request).then(assertSameOrigin),
      schema: {
        tags: ['auth'],
        summary:
          'Complete a two-factor login with its confirmation_token and an authentication_code ' +
          '(or a recovery_token); sets the session cookie',
        body: LoginCheckpointBodySchema,
        response: { 200: CompleteLoginSchema },
      },
    },
    async (request, reply) =>
      answerLogin(request, reply, await services.sessions.checkpoint(contextOf(request), request.body)),
  );

  // Logging out needs the session it ends; it lives in a scope of its own with authentication.
  app.register((scope, _options, done) => {
    requireAuthentication(scope, services);
    scope.post(
      '/auth/logout',
      { schema: { tags: ['auth'], summary: 'End the current session' } },
      async (request, reply) => {
        await services.sessions.logout(authenticatedContextOf(request));
        return reply
          .code(204)
          .header('set-cookie', sessionCookie('', 0, request.protocol === 'https'))
          .send();
      },
    );
    done();
  });
}

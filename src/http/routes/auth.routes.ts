import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { LoginBodySchema, LoginResponseSchema } from '../../auth/auth.schema.ts';
import type { Services } from '../../services.ts';
import { SESSION_COOKIE, requireAuthentication } from '../authenticate.ts';
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

export function authRoutes(app: FastifyInstance, services: Pick<Services, 'sessions' | 'apiKeys'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.post(
    '/auth/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Log in with a username or email and a password; sets the session cookie',
        body: LoginBodySchema,
        response: { 200: LoginResponseSchema },
      },
    },
    async (request, reply) => {
      const result = await services.sessions.login(contextOf(request), request.body);
      reply.header(
        'set-cookie',
        sessionCookie(result.token, result.maxAgeSeconds, request.protocol === 'https'),
      );
      return result.response;
    },
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

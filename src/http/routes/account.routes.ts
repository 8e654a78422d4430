import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  DisableTwoFactorBodySchema,
  EnableTwoFactorBodySchema,
  RecoveryTokensSchema,
  TwoFactorSetupSchema,
} from '../../auth/two-factor.schema.ts';
import type { Services } from '../../services.ts';
import { UpdateEmailBodySchema, UpdatePasswordBodySchema } from '../../users/account.schema.ts';
import { authenticatedContextOf } from '../request-context.ts';

/** The caller's own account: email, password and two-factor authentication. */
export function accountRoutes(
  app: FastifyInstance,
  { account, twoFactor }: Pick<Services, 'account' | 'twoFactor'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const common = { tags: ['account'], security: [{ bearerAuth: [] }] };

  typed.put(
    '/api/client/account/email',
    {
      schema: {
        ...common,
        summary: 'Change the email address, given the current password',
        body: UpdateEmailBodySchema,
      },
    },
    async (request, reply) => {
      await account.changeEmail(authenticatedContextOf(request), request.body);
      return reply.code(204).send();
    },
  );

  typed.put(
    '/api/client/account/password',
    {
      schema: {
        ...common,
        summary: 'Change the password, given the current one; ends every other session',
        body: UpdatePasswordBodySchema,
      },
    },
    async (request, reply) => {
      await account.changePassword(authenticatedContextOf(request), request.body);
      return reply.code(204).send();
    },
  );

  typed.get(
    '/api/client/account/two-factor',
    {
      schema: {
        ...common,
        summary:
          'The pending TOTP secret and its QR code, to set up two-factor authentication with (the same one for 15 minutes, then a new one)',
        response: { 200: TwoFactorSetupSchema },
      },
    },
    async (request) => {
      const setup = await twoFactor.setUp(authenticatedContextOf(request));
      return { data: { image_url_data: setup.uri, secret: setup.secret, qr_code: setup.qrCode } };
    },
  );

  typed.post(
    '/api/client/account/two-factor',
    {
      schema: {
        ...common,
        summary:
          'Turn two-factor authentication on with a code and the password; returns the recovery tokens, once',
        body: EnableTwoFactorBodySchema,
        response: { 200: RecoveryTokensSchema },
      },
    },
    async (request) => ({
      object: 'recovery_tokens' as const,
      attributes: { tokens: await twoFactor.enable(authenticatedContextOf(request), request.body) },
    }),
  );

  typed.post(
    '/api/client/account/two-factor/disable',
    {
      schema: {
        ...common,
        summary: 'Turn two-factor authentication off, given the password',
        body: DisableTwoFactorBodySchema,
      },
    },
    async (request, reply) => {
      await twoFactor.disable(authenticatedContextOf(request), request.body);
      return reply.code(204).send();
    },
  );
}

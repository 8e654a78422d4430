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
import { clientSchema, noContent } from '../client-route.ts';
import { authenticatedContextOf } from '../request-context.ts';

/** The caller's own account: email, password and two-factor authentication. */
export function accountRoutes(
  app: FastifyInstance,
  { account, twoFactor }: Pick<Services, 'account' | 'twoFactor'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const tag = 'account';

  typed.put(
    '/api/client/account/email',
    {
      schema: clientSchema(tag, 'Change the email address, given the current password', {
        body: UpdateEmailBodySchema,
      }),
    },
    (request, reply) => noContent(reply, account.changeEmail(authenticatedContextOf(request), request.body)),
  );

  typed.put(
    '/api/client/account/password',
    {
      schema: clientSchema(tag, 'Change the password, given the current one; ends every other session', {
        body: UpdatePasswordBodySchema,
      }),
    },
    (request, reply) =>
      noContent(reply, account.changePassword(authenticatedContextOf(request), request.body)),
  );

  typed.get(
    '/api/client/account/two-factor',
    {
      schema: clientSchema(
        tag,
        'The pending TOTP secret and its QR code, to set up two-factor authentication with (the same one for 15 minutes, then a new one)',
        { response: { 200: TwoFactorSetupSchema } },
      ),
    },
    async (request) => {
      const setup = await twoFactor.setUp(authenticatedContextOf(request));
      return { data: { image_url_data: setup.uri, secret: setup.secret, qr_code: setup.qrCode } };
    },
  );

  typed.post(
    '/api/client/account/two-factor',
    {
      schema: clientSchema(
        tag,
        'Turn two-factor authentication on with a code and the password; returns the recovery tokens, once',
        { body: EnableTwoFactorBodySchema, response: { 200: RecoveryTokensSchema } },
      ),
    },
    async (request) => ({
      object: 'recovery_tokens' as const,
      attributes: { tokens: await twoFactor.enable(authenticatedContextOf(request), request.body) },
    }),
  );

  typed.post(
    '/api/client/account/two-factor/disable',
    {
      schema: clientSchema(tag, 'Turn two-factor authentication off, given the password', {
        body: DisableTwoFactorBodySchema,
      }),
    },
    (request, reply) => noContent(reply, twoFactor.disable(authenticatedContextOf(request), request.body)),
  );
}

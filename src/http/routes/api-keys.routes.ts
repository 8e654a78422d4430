import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ApiKeyListSchema,
  ApiKeyParamsSchema,
  CreateApiKeyBodySchema,
  CreatedApiKeySchema,
} from '../../api-keys/api-key.schema.ts';
import { toApiKeyResource } from '../../api-keys/api-key.transform.ts';
import type { Services } from '../../services.ts';
import { clientSchema, noContent } from '../client-route.ts';
import { authenticatedContextOf } from '../request-context.ts';

export function apiKeyRoutes(app: FastifyInstance, { apiKeys }: Pick<Services, 'apiKeys'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const tag = 'api keys';

  typed.get(
    '/api/client/account/api-keys',
    {
      schema: clientSchema(tag, "The caller's API keys (never their secrets)", {
        response: { 200: ApiKeyListSchema },
      }),
    },
    async (request) => ({
      object: 'list' as const,
      data: (await apiKeys.list(authenticatedContextOf(request).actor)).map(toApiKeyResource),
    }),
  );

  typed.post(
    '/api/client/account/api-keys',
    {
      schema: clientSchema(tag, 'Create an API key; the response carries its secret, shown only this once', {
        body: CreateApiKeyBodySchema,
        response: { 200: CreatedApiKeySchema },
      }),
    },
    async (request) => {
      const { key, secret } = await apiKeys.create(authenticatedContextOf(request), request.body);
      return { ...toApiKeyResource(key), meta: { secret_token: secret } };
    },
  );

  typed.delete(
    '/api/client/account/api-keys/:identifier',
    {
      schema: clientSchema(tag, 'Delete one of the caller’s API keys', { params: ApiKeyParamsSchema }),
    },
    (request, reply) =>
      noContent(reply, apiKeys.delete(authenticatedContextOf(request), request.params.identifier)),
  );
}

import { Type, type Static } from '@sinclair/typebox';
import { listSchema } from '../shared/page.ts';
import { SingleLineText } from '../shared/text.ts';

export const ApiKeyResourceSchema = Type.Object({
  object: Type.Literal('api_key'),
  attributes: Type.Object({
    identifier: Type.String(),
    description: Type.String(),
    allowed_ips: Type.Array(Type.String()),
    last_used_at: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
  }),
});
export type ApiKeyResource = Static<typeof ApiKeyResourceSchema>;

export const ApiKeyListSchema = listSchema(ApiKeyResourceSchema);
export type ApiKeyList = Static<typeof ApiKeyListSchema>;

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeyResourceSchema.properties,
  meta: Type.Object({
    secret_token: Type.String({ description: 'The 32-character secret, shown only now.' }),
  }),
});
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

export const MAX_ALLOWED_IPS = 50;

export const CreateApiKeyBodySchema = Type.Object({
  // One line, as the key lists show it; see shared/text.ts for what that refuses.
  description: SingleLineText({ maxLength: 500, default: '' }),
  allowed_ips: Type.Array(
    Type.String({
      format: 'ip-or-cidr',
      'x-rule': 'ip',
      'x-message': 'The :field field must be a valid IP address or CIDR range.',
    }),
    { maxItems: MAX_ALLOWED_IPS, default: [] },
  ),
});
export type CreateApiKeyBody = Static<typeof CreateApiKeyBodySchema>;

export const ApiKeyParamsSchema = Type.Object({ identifier: SingleLineText({ maxLength: 64 }) });

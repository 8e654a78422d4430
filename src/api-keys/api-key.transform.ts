import { toWireTime } from '../shared/time.ts';
import type { ApiKeyResource } from './api-key.schema.ts';
import type { ApiKeyRow } from './api-key.table.ts';

export function toApiKeyResource(row: ApiKeyRow): ApiKeyResource {
  return {
    object: 'api_key',
    attributes: {
      identifier: row.identifier,
      description: row.description,
      allowed_ips: JSON.parse(row.allowed_ips) as string[],
      last_used_at: toWireTime(row.last_used_at),
      created_at: toWireTime(row.created_at),
    },
  };
}

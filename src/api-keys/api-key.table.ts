import type { Generated, Insertable, Selectable } from 'kysely';

export interface ApiKeyTable {
  id: Generated<number>;
  user_id: string;
  identifier: string;
  /** SHA-256 (hex) of the 32-character secret. */
  token_hash: string;
  description: string;
  /** JSON array of IP addresses and CIDR ranges; empty means any address. */
  allowed_ips: string;
  last_used_at: string | null;
  created_at: string;
}
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type NewApiKeyRow = Insertable<ApiKeyTable>;

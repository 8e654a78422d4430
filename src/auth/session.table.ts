import type { Selectable } from 'kysely';

export interface SessionTable {
  /** SHA-256 (hex) of the session token; the token itself lives only in the cookie. */
  id: string;
  user_id: string;
  ip: string;
  user_agent: string;
  created_at: string;
  expires_at: string;
}
export type SessionRow = Selectable<SessionTable>;

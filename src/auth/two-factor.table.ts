import type { Generated, Selectable } from 'kysely';

/** The hashes of a user's unused recovery tokens; a token is deleted when it is used. */
export interface RecoveryTokenTable {
  id: Generated<number>;
  user_id: string;
  /** scrypt hash of the token, as passwords are hashed. */
  token_hash: string;
  created_at: string;
}
export type RecoveryTokenRow = Selectable<RecoveryTokenTable>;

/** A login whose password was right, waiting for its second factor. */
export interface LoginCheckpointTable {
  /** SHA-256 (hex) of the confirmation token; the token itself only goes to the client. */
  id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
}
export type LoginCheckpointRow = Selectable<LoginCheckpointTable>;

import type { UserRow } from './user.table.ts';

export interface User {
  readonly id: string;
  /** The stable integer id that the account endpoint shows as `id`. */
  readonly number: number;
  readonly username: string;
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly language: string;
  readonly rootAdmin: boolean;
  readonly createdAt: string;
  /** Whether logging in with a password also takes a TOTP code (or a recovery token). */
  readonly useTotp: boolean;
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    number: Number(row.number),
    username: row.username,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    language: row.language,
    rootAdmin: Number(row.root_admin) === 1,
    createdAt: row.created_at,
    useTotp: row.totp_enabled_at !== null && row.totp_enabled_at !== undefined,
  };
}

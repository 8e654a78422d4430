import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface UserTable {
  id: string;
  /** The stable integer id the account endpoint shows; handed out by `user_numbers`. */
  number: number;
  username: string;
  email: string;
  password_hash: string;
  first_name: string;
  last_name: string;
  language: string;
  /** 1 for an administrator, 0 otherwise. */
  root_admin: number;
  created_at: string;
  updated_at: string;
  /** The TOTP secret, encrypted under the app key: pending while 2FA is set up, then in use. */
  totp_secret: string | null;
  /** When two-factor authentication was turned on; null while it is off. */
  totp_enabled_at: string | null;
  /** The 30-second step of the last TOTP code accepted: no code at or before it is taken again. */
  totp_last_step: number | null;
  /** Until when the pending TOTP secret is handed out again; null when none is pending. */
  totp_pending_expires_at: string | null;
}
export type UserRow = Selectable<UserTable>;

/** Hands out user numbers: an auto-increment id per user, never reused. */
export interface UserNumberTable {
  id: Generated<number>;
  user_id: string;
}
export type NewUserRow = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;

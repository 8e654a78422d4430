import type { RequestContext } from '../shared/context.ts';
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../users/password.ts';
import type { UserRepository } from '../users/user.repository.ts';
import type { LoginThrottle } from './login-throttle.ts';

/**
 * Checks the password a logged-in caller gives to confirm a change to their account (email,
 * password, two-factor authentication). A wrong one counts as a failed login against the
 * account and the address, so a stolen session or API key cannot be used to guess the password;
 * past the login limits the answer is 429, before the password is checked.
 */
export class PasswordCheck {
  constructor(
    private readonly users: UserRepository,
    private readonly throttle: LoginThrottle,
  ) {}

  async matches(context: RequestContext, userId: string, password: string): Promise<boolean> {
    const ip = context.ip ?? 'unknown';
    const account = `user:${userId}`;
    await this.throttle.begin(ip, account);
    const row = await this.users.findById(userId);
    const valid = await verifyPassword(password, row?.password_hash ?? UNUSABLE_PASSWORD_HASH);
    if (!valid || row === undefined) return false;
    await this.throttle.passed(ip, account);
    return true;
  }
}

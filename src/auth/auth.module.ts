import type { ActivityService } from '../activity/activity.service.ts';
import type { ModuleContext } from '../module-context.ts';
import { loadAppKey } from '../shared/app-key.ts';
import { AccountService } from '../users/account.service.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { LoginCheckpointRepository } from './login-checkpoint.repository.ts';
import { LoginThrottle } from './login-throttle.ts';
import { PasswordCheck } from './password-check.ts';
import { RecoveryTokenRepository } from './recovery-token.repository.ts';
import { SecretBox } from './secret-box.ts';
import { SessionRepository } from './session.repository.ts';
import { SessionService } from './session.service.ts';
import { TwoFactorService } from './two-factor.service.ts';

/**
 * Signing in and staying signed in: sessions, two-factor, the login throttle, and the account
 * settings that need the same password checks (email, password, sessions elsewhere).
 */
export function createAuthModule(
  { config, db, transaction, clock, counters }: ModuleContext,
  { users, activity }: { users: UserRepository; activity: ActivityService },
) {
  const sessionRepository = new SessionRepository(db.kysely);
  const checkpoints = new LoginCheckpointRepository(db.kysely);
  const throttle = new LoginThrottle(counters, {
    perAddress: config.loginAttemptsPer15Minutes,
    perAccount: config.loginAccountAttemptsPerHour,
  });
  const passwords = new PasswordCheck(users, throttle);
  const twoFactor = new TwoFactorService({
    users,
    recoveryTokens: new RecoveryTokenRepository(db.kysely),
    checkpoints,
    passwords,
    secrets: new SecretBox(() => loadAppKey(config.appKey, config.dataDir), 'aerie totp secret'),
    activity,
    transaction,
    clock,
  });
  const sessions = new SessionService({
    sessions: sessionRepository,
    users,
    checkpoints,
    twoFactor,
    activity,
    throttle,
    transaction,
    clock,
    ttlSeconds: config.sessionTtlSeconds,
  });
  const account = new AccountService({
    users,
    sessions: sessionRepository,
    checkpoints,
    passwords,
    activity,
    transaction,
    clock,
  });
  return { sessions, twoFactor, account };
}

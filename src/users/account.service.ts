import type { ActivityService } from '../activity/activity.service.ts';
import type { LoginCheckpointRepository } from '../auth/login-checkpoint.repository.ts';
import type { PasswordCheck } from '../auth/password-check.ts';
import type { SessionRepository } from '../auth/session.repository.ts';
import type { Transactor } from '../db/executor.ts';
import { AppError, BadRequestError, ValidationError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { AuthenticatedContext } from './actor.ts';
import type { UpdateEmailBody, UpdatePasswordBody } from './account.schema.ts';
import { hashPassword } from './password.ts';
import type { UserRepository } from './user.repository.ts';

export interface AccountServiceDeps {
  users: UserRepository;
  sessions: SessionRepository;
  checkpoints: LoginCheckpointRepository;
  passwords: PasswordCheck;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
}

/** The reference panel's answer to a wrong current password on the account endpoints. */
export function invalidPassword(): BadRequestError {
  return new BadRequestError(
    'The password provided was invalid for this account.',
    'InvalidPasswordProvidedException',
  );
}

const emailTaken = () =>
  new ValidationError([{ field: 'email', rule: 'unique', message: 'The email has already been taken.' }]);

/** Changes to the caller's own account: their email and their password. */
export class AccountService {
  constructor(private readonly deps: AccountServiceDeps) {}

  /**
   * Changes the email, given the current password. The password is checked first, so that
   * whether an address is taken is told only to the account's owner.
   */
  async changeEmail(context: AuthenticatedContext, body: UpdateEmailBody): Promise<void> {
    const { user } = context.actor;
    if (!(await this.deps.passwords.matches(context, user.id, body.password))) throw invalidPassword();
    // Stored in lower case, as accounts are made, so that the unique index holds in any case.
    const email = body.email.trim().toLowerCase();
    try {
      await this.deps.transaction(async (trx) => {
        const row = await this.deps.users.findById(user.id, trx);
        if (row === undefined || row.email === email) return;
        if (await this.deps.users.emailTaken(email, user.id, trx)) throw emailTaken();
        await this.deps.users.updateEmail(user.id, email, toStoredTime(this.deps.clock()), trx);
        await this.deps.activity.record(
          context,
          {
            event: 'user:account.email-changed',
            actor: context.actor,
            properties: { old: row.email, new: email },
            subjects: [{ type: 'user', id: user.id }],
          },
          trx,
        );
      });
    } catch (error) {
      // Another account took the address between the check and the write: the unique index
      // refused it, which is the same answer.
      if (!(error instanceof AppError) && (await this.deps.users.emailTaken(email, user.id))) {
        throw emailTaken();
      }
      throw error;
    }
  }

  /**
   * Changes the password, given the current one, and ends every other session of the account
   * (and every login waiting for its second factor): whoever knew the old password is logged
   * out. The session that made the change stays; API keys keep working.
   */
  async changePassword(context: AuthenticatedContext, body: UpdatePasswordBody): Promise<void> {
    const { user, sessionId } = context.actor;
    if (!(await this.deps.passwords.matches(context, user.id, body.current_password))) {
      throw invalidPassword();
    }
    if (body.password !== body.password_confirmation) {
      throw new ValidationError([
        {
          field: 'password',
          rule: 'confirmed',
          message: 'The password_confirmation field must match the password field.',
        },
      ]);
    }
    const hash = await hashPassword(body.password);
    await this.deps.transaction(async (trx) => {
      await this.deps.users.updatePassword(user.id, hash, toStoredTime(this.deps.clock()), trx);
      await this.deps.sessions.deleteForUser(user.id, sessionId, trx);
      await this.deps.checkpoints.deleteForUser(user.id, trx);
      await this.deps.activity.record(
        context,
        {
          event: 'user:account.password-changed',
          actor: context.actor,
          subjects: [{ type: 'user', id: user.id }],
        },
        trx,
      );
    });
  }
}

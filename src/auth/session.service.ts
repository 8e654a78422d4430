import type { ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { DisplayError, NotAuthenticatedError, ValidationError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';
import { randomAlphanumeric } from '../shared/random.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../users/password.ts';
import type { UserRepository } from '../users/user.repository.ts';
import type { UserRow } from '../users/user.table.ts';
import { toUser, type User } from '../users/user.ts';
import type { CompleteLogin, LoginBody, LoginCheckpointBody, LoginResponse } from './auth.schema.ts';
import type { LoginCheckpointRepository } from './login-checkpoint.repository.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { SessionRepository } from './session.repository.ts';
import type { SecondFactor, TwoFactorService } from './two-factor.service.ts';

/** A session just started: the token for the cookie (only its SHA-256 is stored). */
export interface SessionGrant {
  token: string;
  expiresAt: Date;
  /** The cookie's lifetime: the session's, counted on the service's clock. */
  maxAgeSeconds: number;
}

export interface LoginResult {
  response: LoginResponse;
  /** Null while the login waits for its second factor: no cookie is set then. */
  session: SessionGrant | null;
}

/** A login that is done, with its session. */
export interface CompletedLogin extends LoginResult {
  response: CompleteLogin;
  session: SessionGrant;
}

export interface SessionServiceDeps {
  sessions: SessionRepository;
  users: UserRepository;
  checkpoints: LoginCheckpointRepository;
  twoFactor: TwoFactorService;
  activity: ActivityService;
  throttle: LoginThrottle;
  transaction: Transactor;
  clock: Clock;
  ttlSeconds: number;
  /** How long a login may wait for its second factor (the reference panel: 5 minutes). */
  checkpointTtlSeconds?: number;
}

/** A checkpoint whose second factor checked out, to be taken with the session it starts. */
interface PassedCheckpoint {
  checkpointId: string;
  factor: SecondFactor;
  /** The answer if the factor turns out to have been used meanwhile. */
  refusal: string;
}

const BAD_CREDENTIALS = 'No account matching those credentials could be found.';
const CHECKPOINT_EXPIRED =
  'The authentication token provided has expired, please refresh the page and try again.';
const CODE_INVALID = 'The two-factor authentication token was invalid.';
/** Said only of a code right for the account: its step was taken by an earlier login. */
const CODE_USED = 'This two-factor authentication code was already used; wait for the next one.';
const RECOVERY_TOKEN_INVALID = 'The recovery token provided is not valid.';

/**
 * Thrown inside a checkpoint's transaction to undo it: the checkpoint was taken or expired, or
 * the second factor used, by another request meanwhile.
 */
class CheckpointLost extends Error {
  constructor(readonly refusal: string) {
    super(refusal);
  }
}

export class SessionService {
  constructor(private readonly deps: SessionServiceDeps) {}

  /**
   * Checks a username or email and password. Without two-factor authentication that is the
   * whole login; with it, the answer is a confirmation token for `checkpoint` and no session.
   */
  async login(context: RequestContext, body: LoginBody): Promise<LoginResult> {
    const ip = context.ip ?? 'unknown';
    const row = await this.deps.users.findByLogin(body.user);
    // An account is throttled as one, whether addressed by its username or its email.
    const account = row === undefined ? `login:${body.user}` : `user:${row.id}`;
    await this.deps.throttle.begin(ip, account);
    // The hash is checked even when no user matches, so the answer takes as long either way.
    const valid = await verifyPassword(body.password, row?.password_hash ?? UNUSABLE_PASSWORD_HASH);
    if (row === undefined || !valid) {
      await this.deps.activity.record(context, {
        event: 'auth:fail',
        actor: null,
        properties: { username: body.user },
        subjects: row === undefined ? [] : [{ type: 'user', id: row.id }],
      });
      throw new DisplayError(BAD_CREDENTIALS);
    }
    const user = toUser(row);
    if (!user.useTotp) {
      await this.deps.throttle.succeeded(ip, account);
      return this.startSession(context, user, null);
    }
    // Half a login: the address becomes known to the account only once the second factor passes.
    await this.deps.throttle.passed(ip, account);
    return this.awaitSecondFactor(context, user);
  }

  private async awaitSecondFactor(context: RequestContext, user: User): Promise<LoginResult> {
    const token = randomAlphanumeric(64);
    const now = this.deps.clock();
    const ttl = this.deps.checkpointTtlSeconds ?? 300;
    await this.deps.checkpoints.deleteExpired(toStoredTime(now));
    await this.deps.transaction(async (trx) => {
      await this.deps.checkpoints.insert(
        {
          id: sha256Hex(token),
          user_id: user.id,
          created_at: toStoredTime(now),
          expires_at: toStoredTime(new Date(now.getTime() + ttl * 1000)),
        },
        trx,
      );
      await this.deps.activity.record(
        context,
        {
          event: 'auth:checkpoint',
          actor: { user, apiKeyId: null, sessionId: null },
          subjects: [{ type: 'user', id: user.id }],
        },
        trx,
      );
    });
    return { session: null, response: { data: { complete: false, confirmation_token: token } } };
  }

  /**
   * Completes a login that waits for its second factor: a TOTP code, or a recovery token. The
   * answer and the cookie are those of a login without 2FA. A confirmation token completes one
   * login, within 5 minutes; the code or recovery token it took is used up with it. Failures
   * count against the login throttle, as failed logins do.
   */
  async checkpoint(context: RequestContext, body: LoginCheckpointBody): Promise<CompletedLogin> {
    const code = present(body.authentication_code);
    const recoveryToken = present(body.recovery_token);
    if (code === undefined && recoveryToken === undefined) {
      const message = (field: string, other: string) =>
        `The ${field} field is required when ${other} is not present.`;
      throw new ValidationError([
        {
          field: 'authentication_code',
          rule: 'required',
          message: message('authentication_code', 'recovery_token'),
        },
        {
          field: 'recovery_token',
          rule: 'required',
          message: message('recovery_token', 'authentication_code'),
        },
      ]);
    }
    const ip = context.ip ?? 'unknown';
    const id = sha256Hex(body.confirmation_token);
    const pending = await this.deps.checkpoints.find(id);
    // Counted against the account the token is for. A token that names nothing counts against
    // its address alone: a per-token ceiling would never be reached (guesses are all different
    // tokens), yet each would hold a counter for an hour.
    const account = pending === undefined ? null : `user:${pending.user_id}`;
    await this.deps.throttle.begin(ip, account);

    const now = this.deps.clock();
    const row = pending && (await this.deps.users.findById(pending.user_id));
    if (pending === undefined || pending.expires_at <= toStoredTime(now) || row === undefined) {
      await this.recordFailure(context, row);
      throw new DisplayError(CHECKPOINT_EXPIRED);
    }
    const proof =
      recoveryToken !== undefined
        ? { recoveryToken }
        : { code: typeof code === 'number' ? String(code).padStart(6, '0') : String(code) };
    const factor = await this.deps.twoFactor.check(row, proof, now);
    if (factor === 'invalid' || factor === 'used') {
      await this.recordFailure(context, row);
      throw new DisplayError(
        recoveryToken !== undefined ? RECOVERY_TOKEN_INVALID : factor === 'used' ? CODE_USED : CODE_INVALID,
      );
    }
    // A right code whose step another login takes meanwhile was used, by that login.
    const refusal = factor.kind === 'recovery' ? RECOVERY_TOKEN_INVALID : CODE_USED;
    let result: CompletedLogin;
    try {
      result = await this.startSession(context, toUser(row), { checkpointId: id, factor, refusal });
    } catch (error) {
      if (!(error instanceof CheckpointLost)) throw error;
      await this.recordFailure(context, row);
      throw new DisplayError(error.refusal);
    }
    await this.deps.throttle.succeeded(ip, account);
    return result;
  }

  private recordFailure(context: RequestContext, row: UserRow | undefined): Promise<void> {
    return this.deps.activity.record(context, {
      event: 'auth:fail',
      actor: null,
      properties: { username: row?.username ?? null, two_factor: true },
      subjects: row === undefined ? [] : [{ type: 'user', id: row.id }],
    });
  }

  /**
   * Starts a session, with `auth:login`. After a checkpoint, in the same transaction: the
   * checkpoint is taken and the second factor used up, recorded as `auth:token` or
   * `auth:recovery-token`; if another request took either first, everything is undone
   * (CheckpointLost).
   */
  private async startSession(
    context: RequestContext,
    user: User,
    checkpoint: PassedCheckpoint | null,
  ): Promise<CompletedLogin> {
    const token = randomAlphanumeric(48);
    const now = this.deps.clock();
    const expiresAt = new Date(now.getTime() + this.deps.ttlSeconds * 1000);
    const sessionId = sha256Hex(token);
    const actor: Actor = { user, apiKeyId: null, sessionId };
    // Logins are rare next to requests: a fine moment to drop sessions that have run out.
    await this.deps.sessions.deleteExpired(toStoredTime(now));
    await this.deps.transaction(async (trx) => {
      if (checkpoint !== null) await this.passCheckpoint(context, actor, checkpoint, now, trx);
      await this.deps.sessions.insert(
        {
          id: sessionId,
          user_id: user.id,
          ip: context.ip ?? 'unknown',
          user_agent: context.userAgent.slice(0, 500),
          created_at: toStoredTime(now),
          expires_at: toStoredTime(expiresAt),
        },
        trx,
      );
      await this.deps.activity.record(
        context,
        { event: 'auth:login', actor, subjects: [{ type: 'user', id: user.id }] },
        trx,
      );
    });
    return {
      session: { token, expiresAt, maxAgeSeconds: this.deps.ttlSeconds },
      response: completeLogin(user),
    };
  }

  private async passCheckpoint(
    context: RequestContext,
    actor: Actor,
    { checkpointId, factor, refusal }: PassedCheckpoint,
    now: Date,
    trx: Executor,
  ): Promise<void> {
    if (!(await this.deps.checkpoints.claim(checkpointId, toStoredTime(now), trx))) {
      throw new CheckpointLost(CHECKPOINT_EXPIRED);
    }
    if (!(await this.deps.twoFactor.consume(actor.user.id, factor, trx))) throw new CheckpointLost(refusal);
    await this.deps.activity.record(
      context,
      {
        event: factor.kind === 'totp' ? 'auth:token' : 'auth:recovery-token',
        actor,
        subjects: [{ type: 'user', id: actor.user.id }],
      },
      trx,
    );
  }

  async logout(context: AuthenticatedContext): Promise<void> {
    const { sessionId, user } = context.actor;
    if (sessionId === null) return;
    await this.deps.transaction(async (trx) => {
      await this.deps.sessions.delete(sessionId, trx);
      await this.deps.activity.record(
        context,
        { event: 'auth:logout', actor: context.actor, subjects: [{ type: 'user', id: user.id }] },
        trx,
      );
    });
  }

  async authenticate(token: string): Promise<Actor> {
    if (!/^[A-Za-z0-9]{48}$/.test(token)) throw new NotAuthenticatedError();
    const session = await this.deps.sessions.findLive(sha256Hex(token), toStoredTime(this.deps.clock()));
    const row = session && (await this.deps.users.findById(session.user_id));
    if (session === undefined || row === undefined) throw new NotAuthenticatedError();
    return { user: toUser(row), apiKeyId: null, sessionId: session.id };
  }
}

function completeLogin(user: User): CompleteLogin {
  return {
    data: {
      complete: true,
      intended: '/',
      user: {
        uuid: user.id,
        username: user.username,
        email: user.email,
        first_name: user.firstName,
        last_name: user.lastName,
        language: user.language,
        root_admin: user.rootAdmin,
      },
    },
  };
}

/** A field's value, with null and empty text taken as absent (clients send either). */
function present<T>(value: T | null | undefined): T | undefined {
  return value === null || value === undefined || value === '' ? undefined : value;
}

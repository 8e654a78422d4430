import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { DisplayError, NotAuthenticatedError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';
import { randomAlphanumeric } from '../shared/random.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { UNUSABLE_PASSWORD_HASH, verifyPassword } from '../users/password.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { toUser } from '../users/user.ts';
import type { LoginBody, LoginResponse } from './auth.schema.ts';
import type { LoginThrottle } from './login-throttle.ts';
import type { SessionRepository } from './session.repository.ts';

export interface LoginResult {
  response: LoginResponse;
  /** The session token for the cookie; only its SHA-256 is stored. */
  token: string;
  expiresAt: Date;
  /** The cookie's lifetime: the session's, counted on the service's clock. */
  maxAgeSeconds: number;
}

export interface SessionServiceDeps {
  sessions: SessionRepository;
  users: UserRepository;
  activity: ActivityService;
  throttle: LoginThrottle;
  transaction: Transactor;
  clock: Clock;
  ttlSeconds: number;
}

export class SessionService {
  constructor(private readonly deps: SessionServiceDeps) {}

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
      throw new DisplayError('No account matching those credentials could be found.');
    }
    await this.deps.throttle.succeeded(ip, account);

    const user = toUser(row);
    const token = randomAlphanumeric(48);
    const now = this.deps.clock();
    const expiresAt = new Date(now.getTime() + this.deps.ttlSeconds * 1000);
    const sessionId = sha256Hex(token);
    // Logins are rare next to requests: a fine moment to drop sessions that have run out.
    await this.deps.sessions.deleteExpired(toStoredTime(now));
    await this.deps.transaction(async (trx) => {
      await this.deps.sessions.insert(
        {
          id: sessionId,
          user_id: user.id,
          ip,
          user_agent: context.userAgent.slice(0, 500),
          created_at: toStoredTime(now),
          expires_at: toStoredTime(expiresAt),
        },
        trx,
      );
      await this.deps.activity.record(
        context,
        {
          event: 'auth:login',
          actor: { user, apiKeyId: null, sessionId },
          subjects: [{ type: 'user', id: user.id }],
        },
        trx,
      );
    });
    return {
      token,
      expiresAt,
      maxAgeSeconds: this.deps.ttlSeconds,
      response: {
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
      },
    };
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

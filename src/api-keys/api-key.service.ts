import { timingSafeEqual } from 'node:crypto';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { DisplayError, ForbiddenError, NotAuthenticatedError, NotFoundError } from '../shared/errors.ts';
import { sha256Hex } from '../shared/hash.ts';
import { ipAllowed, normalizeIp } from '../shared/ip.ts';
import { randomAlphanumeric } from '../shared/random.ts';
import { assertText } from '../shared/text.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { toUser } from '../users/user.ts';
import type { ApiKeyRepository } from './api-key.repository.ts';
import type { CreateApiKeyBody } from './api-key.schema.ts';
import type { ApiKeyRow } from './api-key.table.ts';

export const MAX_KEYS_PER_USER = 25;
const IDENTIFIER_PREFIX = 'ptlc_';
const TOKEN = /^ptlc_[A-Za-z0-9]{11}[A-Za-z0-9]{32}$/;
const LAST_USED_RESOLUTION_MS = 60_000;
/** Compared against when no key matches, so that a miss takes as long as a wrong secret. */
const NO_KEY_HASH = Buffer.alloc(32);

export interface ApiKeyServiceDeps {
  keys: ApiKeyRepository;
  users: UserRepository;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
}

export class ApiKeyService {
  constructor(private readonly deps: ApiKeyServiceDeps) {}

  list(actor: Actor): Promise<ApiKeyRow[]> {
    return this.deps.keys.listForUser(actor.user.id);
  }

  /** Creates a key and returns it with its secret, the only time the secret is ever shown. */
  async create(
    context: AuthenticatedContext,
    input: CreateApiKeyBody,
  ): Promise<{ key: ApiKeyRow; secret: string; token: string }> {
    // Checked again for the command line, which has no request schema.
    assertText('description', input.description, 'single-line');
    const { user } = context.actor;
    const allowedIps = [...new Set(input.allowed_ips.map((ip) => ip.trim()))];
    const secret = randomAlphanumeric(32);
    const row = await this.deps.transaction(async (trx) => {
      await this.deps.users.lock(user.id, trx);
      if ((await this.deps.keys.countForUser(user.id, trx)) >= MAX_KEYS_PER_USER) {
        throw new DisplayError('You have reached the account limit for number of API keys.');
      }
      const values = {
        user_id: user.id,
        identifier: await this.freeIdentifier(trx),
        token_hash: sha256Hex(secret),
        description: input.description,
        allowed_ips: JSON.stringify(allowedIps),
        last_used_at: null,
        created_at: toStoredTime(this.deps.clock()),
      };
      const id = await this.deps.keys.insert(values, trx);
      await this.deps.activity.record(
        context,
        keyEntry(context, 'user:api-key.create', { ...values, id }),
        trx,
      );
      return { ...values, id };
    });
    return { key: row, secret, token: row.identifier + secret };
  }

  async delete(context: AuthenticatedContext, identifier: string): Promise<void> {
    const { user } = context.actor;
    await this.deps.transaction(async (trx) => {
      const row = await this.deps.keys.findByIdentifier(identifier, trx);
      if (row === undefined || row.user_id !== user.id) throw new NotFoundError();
      await this.deps.keys.delete(row.id, trx);
      await this.deps.activity.record(context, keyEntry(context, 'user:api-key.delete', row), trx);
    });
  }

  /**
   * Resolves a bearer token (identifier + secret) to its user. The secret is compared by its
   * SHA-256 in constant time. A key used from an address outside its `allowed_ips` is refused
   * with 403, and the attempt recorded.
   */
  async authenticate(token: string, context: RequestContext): Promise<Actor> {
    if (!TOKEN.test(token)) throw new NotAuthenticatedError();
    const identifier = token.slice(0, 16);
    // Compared exactly here too: MariaDB's default collation matches identifiers in any case.
    const found = await this.deps.keys.findByIdentifier(identifier);
    const row = found?.identifier === identifier ? found : undefined;
    const given = Buffer.from(sha256Hex(token.slice(16)), 'hex');
    const expected = row === undefined ? NO_KEY_HASH : Buffer.from(row.token_hash, 'hex');
    if (!timingSafeEqual(given, expected) || row === undefined) throw new NotAuthenticatedError();
    const userRow = await this.deps.users.findById(row.user_id);
    if (userRow === undefined) throw new NotAuthenticatedError();
    const actor: Actor = { user: toUser(userRow), apiKeyId: row.id, sessionId: null };

    const ip = normalizeIp(context.ip ?? '');
    if (!ipAllowed(ip, JSON.parse(row.allowed_ips) as string[])) {
      await this.deps.activity.record(context, {
        event: 'auth:ip-blocked',
        actor,
        properties: { identifier: row.identifier },
        subjects: [{ type: 'user', id: actor.user.id }],
      });
      throw new ForbiddenError(
        `This IP address (${ip}) does not have permission to access the API using these credentials.`,
      );
    }
    const now = this.deps.clock();
    const staleBefore = toStoredTime(new Date(now.getTime() - LAST_USED_RESOLUTION_MS));
    // Every request passes here: write only when the stored time is stale (the row is in hand),
    // and let the guarded UPDATE settle a race between two requests.
    if (row.last_used_at === null || row.last_used_at < staleBefore) {
      await this.deps.keys.touch(row.id, toStoredTime(now), staleBefore);
    }
    return actor;
  }

  private async freeIdentifier(trx: Executor): Promise<string> {
    for (;;) {
      const identifier = IDENTIFIER_PREFIX + randomAlphanumeric(11);
      if ((await this.deps.keys.findByIdentifier(identifier, trx)) === undefined) return identifier;
    }
  }
}

/** The audit entry of a change to one of the caller's keys: about the user and about the key. */
function keyEntry(
  context: AuthenticatedContext,
  event: 'user:api-key.create' | 'user:api-key.delete',
  key: { id: number; identifier: string },
) {
  return {
    event,
    actor: context.actor,
    properties: { identifier: key.identifier },
    subjects: [
      { type: 'user' as const, id: context.actor.user.id },
      { type: 'api_key' as const, id: String(key.id) },
    ],
  };
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CounterStore } from '../shared/counter-store.ts';
import { TooManyRequestsError } from '../shared/errors.ts';
import { normalizeIp } from '../shared/ip.ts';

const MINUTE = 60_000;

/**
 * Requests a minute, counted per user once authenticated. Requests that fail authentication
 * are counted per address, and an address over the limit is refused before its credentials are
 * even looked at (no guessing keys at full speed). Every response says where the caller stands.
 */
export class ApiRateLimiter {
  constructor(
    private readonly store: CounterStore,
    private readonly perMinute: number,
  ) {}

  /** Adds the limiter's hooks around `authenticate`, which must add the authentication hook. */
  install(scope: FastifyInstance, authenticate: () => void): void {
    if (this.perMinute === 0) {
      authenticate();
      return;
    }
    scope.addHook('onRequest', (request, reply) => this.refuseBlockedAddress(request, reply));
    authenticate();
    scope.addHook('onRequest', (request, reply) => this.countUser(request, reply));
    scope.addHook('onSend', async (request, reply) => {
      if (reply.statusCode === 401) await this.countFailure(request, reply);
    });
  }

  private addressKey(request: FastifyRequest): string {
    return `api:ip:${normalizeIp(request.ip)}`;
  }

  private setHeaders(reply: FastifyReply, count: number): void {
    reply.header('x-ratelimit-limit', this.perMinute);
    reply.header('x-ratelimit-remaining', Math.max(0, this.perMinute - count));
  }

  private async refuseBlockedAddress(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { count, resetInMs } = await this.store.peek(this.addressKey(request));
    if (count >= this.perMinute) {
      this.setHeaders(reply, count);
      throw new TooManyRequestsError(resetInMs / 1000);
    }
  }

  private async countUser(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.actor === null) return;
    const { count, resetInMs } = await this.store.increment(`api:user:${request.actor.user.id}`, MINUTE);
    this.setHeaders(reply, count);
    if (count > this.perMinute) throw new TooManyRequestsError(resetInMs / 1000);
  }

  private async countFailure(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { count } = await this.store.increment(this.addressKey(request), MINUTE);
    this.setHeaders(reply, count);
  }
}

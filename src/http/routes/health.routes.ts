import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { HealthService } from '../../ops/health.service.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import { errorEnvelope } from '../envelope.ts';

const Checks = Type.Object({
  database: Type.String(),
  migrations: Type.String(),
  storage: Type.String(),
  /** Only with REDIS_URL; never makes the process unready (see `Readiness`). */
  redis: Type.Optional(Type.String()),
});

/**
 * Probes for orchestrators and load balancers: no authentication, no rate limit, no activity
 * entry, and their requests are not logged at info level (a probe every few seconds would drown
 * the log). `/health/live` touches nothing; `/health/ready` checks what serving needs: 200
 * `ok`, 200 `degraded` when only Redis is not answering (requests are still served), else 503.
 */
export function healthRoutes(app: FastifyInstance, health: HealthService): void {
  app.get(
    '/health/live',
    {
      logLevel: 'warn',
      schema: { hide: true, response: { 200: Type.Object({ status: Type.Literal('ok') }) } },
    },
    () => ({ status: 'ok' as const }),
  );
  app.get(
    '/health/ready',
    {
      logLevel: 'warn',
      schema: {
        hide: true,
        response: {
          200: Type.Object({
            status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
            checks: Checks,
          }),
          503: Type.Object({
            status: Type.Literal('unavailable'),
            checks: Checks,
            errors: Type.Array(
              Type.Object({ code: Type.String(), status: Type.String(), detail: Type.String() }),
            ),
          }),
        },
      },
    },
    async (_request, reply) => {
      const { ready, degraded, checks } = await health.readiness();
      reply.header('cache-control', 'no-store');
      if (ready) return { status: degraded ? ('degraded' as const) : ('ok' as const), checks };
      const failed = Object.entries(checks)
        .filter(([name, result]) => result !== 'ok' && name !== 'redis')
        .map(([name, result]) => `${name} ${result}`);
      return reply.code(503).send({
        status: 'unavailable' as const,
        checks,
        ...errorEnvelope(503, 'ServiceUnavailableHttpException', `Not ready: ${failed.join('; ')}.`),
      });
    },
  );
}

/** `GET /metrics` on the API's own listener (AERIE_METRICS=on without AERIE_METRICS_ADDRESS). */
export function metricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (_request, reply) => {
    const { contentType, body } = await metrics.scrape();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(body);
  });
}

/**
 * Times every request that reaches a route (or the not-found handler), labelled with the
 * route's pattern, never its path.
 */
export function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      request.routeOptions.url,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}

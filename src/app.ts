import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { RouteIndex } from './http/allowed-methods.ts';
import { requireAuthentication } from './http/authenticate.ts';
import { installNoStoreDefault } from './http/cache-control.ts';
import { ApiRateLimiter } from './http/rate-limit.ts';
import { installBodyParsing } from './http/body-parsing.ts';
import { frameworkErrorHandler, installErrorHandling } from './http/error-handler.ts';
import { clientErrorHandler, refuseUnservableRequests, refuseWhileClosing } from './http/raw-refusals.ts';
import { accountRoutes } from './http/routes/account.routes.ts';
import { activityRoutes } from './http/routes/activity.routes.ts';
import { apiKeyRoutes } from './http/routes/api-keys.routes.ts';
import { authRoutes } from './http/routes/auth.routes.ts';
import { serverRoutes } from './http/routes/servers.routes.ts';
import { backupDownloadRoute, serverBackupRoutes } from './http/routes/server-backups.routes.ts';
import { backupRetentionRoutes } from './http/routes/backup-retention.routes.ts';
import { serverScheduleRoutes } from './http/routes/server-schedules.routes.ts';
import { serverEventRoutes } from './http/routes/server-events.routes.ts';
import { subuserRoutes } from './http/routes/subusers.routes.ts';
import { openApiRoutes } from './http/routes/openapi.routes.ts';
import { healthRoutes, installRequestMetrics, metricsRoute } from './http/routes/health.routes.ts';
import { panelRoutes } from './http/panel.ts';
import { OneLineRequestLog } from './http/request-log.ts';
import { validatorCompiler } from './http/validation.ts';
import type { Runtime } from './runtime.ts';
import type { Services } from './services.ts';

/** What the HTTP app is built on: the parts of an open runtime (see `openRuntime`) it uses. */
export type AppDeps = Pick<Runtime, 'config' | 'services' | 'counters' | 'logger' | 'ops'>;

export interface App {
  http: FastifyInstance;
  services: Services;
}

/**
 * The HTTP app on a runtime's services and counters: routes, schemas, hooks. The runtime owns
 * the database and the counters; closing the app closes neither.
 */
export async function buildApp({ config, services, counters, logger, ops }: AppDeps): Promise<App> {
  // Typed as Fastify's logger interface, so routes and plugins see the usual FastifyInstance.
  const loggerInstance: FastifyBaseLogger = logger;
  const http = Fastify({
    loggerInstance,
    // One line per request, when its response is finished.
    logController: new OneLineRequestLog(),
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (_address: string, hop: number) => hop < (config.trustProxy as number)
        : config.trustProxy,
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Requests that arrive while closing get their 503 from refuseWhileClosing, in the envelope.
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // Bodies are small: a request still arriving after this is refused with a 408 (the envelope,
    // from clientErrorHandler), so no slow or malformed request holds a connection for long.
    requestTimeout: config.requestTimeoutMs,
    http: {
      // An HTTP/1.1 request without Host gets its 400 from refuseUnservableRequests, in the envelope.
      requireHostHeader: false,
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.max(250, Math.min(30_000, config.requestTimeoutMs / 4)),
    },
  });
  http.decorateRequest('actor', null);
  for (const resolved of ['serverAccess', 'backup', 'subuser', 'schedule', 'scheduleTask'] as const)
    http.decorateRequest(resolved, null);
  http.decorateRequest('publicUrl', config.publicUrl);
  http.setValidatorCompiler(validatorCompiler);
  http.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  installNoStoreDefault(http);

  if (ops.metrics) installRequestMetrics(http, ops.metrics);

  const routes = new RouteIndex();
  http.addHook('onRoute', (route) => routes.add(route.method, route.url));
  installErrorHandling(http, routes);
  refuseUnservableRequests(http, routes);
  refuseWhileClosing(http);
  installBodyParsing(http);

  await http.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Aerie client API',
        version: '1.0.0',
        description: 'A Pterodactyl-compatible client API: activity logs, API keys and backup restores.',
      },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: identifier and secret, 48 characters.',
          },
        },
      },
    },
  });

  healthRoutes(http, ops.health);
  // With AERIE_METRICS_ADDRESS the metrics are served on their own listener, not here.
  if (ops.metrics && config.metrics.address === null) metricsRoute(http, ops.metrics);
  authRoutes(http, services);
  openApiRoutes(http);
  backupDownloadRoute(http, services);
  await http.register((client, _options, done) => {
    new ApiRateLimiter(counters, config.apiRateLimitPerMinute).install(client, () =>
      requireAuthentication(client, services),
    );
    activityRoutes(client, services);
    apiKeyRoutes(client, services);
    accountRoutes(client, services);
    serverRoutes(client, services);
    serverBackupRoutes(client, services);
    serverScheduleRoutes(client, services);
    backupRetentionRoutes(client, services);
    serverEventRoutes(client, services, config.eventStreams);
    subuserRoutes(client, services);
    done();
  });

  // The web panel at `/` (and its client-side routes): after every API route, so none is shadowed.
  await panelRoutes(http, config.panelDir ?? undefined);

  await http.ready();
  return { http, services };
}

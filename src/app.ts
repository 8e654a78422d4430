import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Db } from './db/connection.ts';
import { RouteIndex } from './http/allowed-methods.ts';
import { requireAuthentication } from './http/authenticate.ts';
import { ApiRateLimiter } from './http/rate-limit.ts';
import { RedisCounterStore } from './shared/redis-counter-store.ts';
import { installBodyParsing } from './http/body-parsing.ts';
import { frameworkErrorHandler, installErrorHandling } from './http/error-handler.ts';
import { clientErrorHandler, refuseUnservableRequests, refuseWhileClosing } from './http/raw-refusals.ts';
import { activityRoutes } from './http/routes/activity.routes.ts';
import { apiKeyRoutes } from './http/routes/api-keys.routes.ts';
import { authRoutes } from './http/routes/auth.routes.ts';
import { backupRoutes } from './http/routes/backups.routes.ts';
import { serverRoutes } from './http/routes/servers.routes.ts';
import { backupDownloadRoute, serverBackupRoutes } from './http/routes/server-backups.routes.ts';
import { subuserRoutes } from './http/routes/subusers.routes.ts';
import { openApiRoutes } from './http/routes/openapi.routes.ts';
import { validatorCompiler } from './http/validation.ts';
import { createServices, type Services } from './services.ts';
import { MemoryCounterStore, type CounterStore } from './shared/counter-store.ts';
import { systemClock, type Clock } from './shared/time.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  clock?: Clock;
  counters?: CounterStore;
  /** A pino logger; none in tests. */
  logger?: FastifyBaseLogger;
}

export interface App {
  http: FastifyInstance;
  services: Services;
}

/** The composition root: database → repositories → services → routes. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, db } = deps;
  const counters =
    deps.counters ??
    (config.redisUrl === null ? new MemoryCounterStore() : new RedisCounterStore(config.redisUrl));
  const services = createServices({
    config,
    db,
    clock: deps.clock ?? systemClock,
    counters,
    ...(deps.logger ? { logger: deps.logger as Logger } : {}),
  });

  const http = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
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
  http.decorateRequest('publicUrl', config.publicUrl);
  if (deps.counters === undefined) http.addHook('onClose', () => counters.close());
  http.setValidatorCompiler(validatorCompiler);
  http.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

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

  authRoutes(http, services);
  openApiRoutes(http);
  backupDownloadRoute(http, services);
  await http.register((client, _options, done) => {
    new ApiRateLimiter(counters, config.apiRateLimitPerMinute).install(client, () =>
      requireAuthentication(client, services),
    );
    activityRoutes(client, services);
    apiKeyRoutes(client, services);
    backupRoutes(client, services);
    serverRoutes(client, services);
    serverBackupRoutes(client, services);
    subuserRoutes(client, services);
    done();
  });

  await http.ready();
  return { http, services };
}

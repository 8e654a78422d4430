import type http from 'node:http';
import type { Logger } from 'pino';
import { createRequire } from 'node:module';
import type { Counter, Histogram, Registry } from 'prom-client';
import type { MetricsAddress } from '../config.ts';
import type { JobAttemptEnd, JobObserver } from '../jobs/job-observer.ts';
import type { SharedCounterHealth } from '../shared/fallback-counter-store.ts';

export interface MetricsDeps {
  /** Queued jobs by kind, read when scraped. */
  queuedJobs: () => Promise<Map<string, number>>;
  /** Every job kind, reported (as 0) even when none is queued. */
  jobKinds: readonly string[];
  logger: Logger;
  /** How long a scrape waits for the queue depth before it leaves it out. */
  scrapeTimeoutMs?: number;
  /** The shared counters (Redis), when REDIS_URL is set. */
  redis?: SharedCounterHealth | null;
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Aerie's Prometheus metrics, in a registry of its own. Every label takes values from a small
 * fixed set: requests are labelled with the route's pattern (`/api/client/servers/:server`),
 * never the path a client sent, so no client can grow the number of series.
 */
export class Metrics implements JobObserver {
  readonly registry: Registry;
  private readonly requestDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly jobs: Counter<'kind' | 'outcome'>;
  private readonly jobDuration: Histogram<'kind' | 'outcome'>;
  private readonly backupBytesWritten: Counter;
  private readonly backupBytesRestored: Counter;
  private server: http.Server | undefined;

  constructor(private readonly deps: MetricsDeps) {
    // prom-client is loaded by the processes that serve metrics, not by every process.
    const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = createRequire(import.meta.url)(
      'prom-client',
    ) as typeof import('prom-client');
    this.registry = new Registry();
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requestDuration = new Histogram({
      name: 'aerie_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status, and how long they took',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.jobs = new Counter({
      name: 'aerie_jobs_total',
      help: 'Attempts at jobs that ended, by kind and outcome (succeeded, failed, retried, abandoned)',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: 'aerie_job_duration_seconds',
      help: 'How long attempts at jobs ran, by kind and outcome',
      labelNames: ['kind', 'outcome'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 21600],
      registers,
    });
    this.backupBytesWritten = new Counter({
      name: 'aerie_backup_written_bytes_total',
      help: 'Bytes of backup archives written by backups that succeeded',
      registers,
    });
    this.backupBytesRestored = new Counter({
      name: 'aerie_backup_restored_bytes_total',
      help: 'Bytes of file content written to server volumes by restores that succeeded',
      registers,
    });
    const redis = deps.redis;
    if (redis !== undefined && redis !== null) {
      // Read from the store when scraped: it knows whether Redis answered its last call.
      new Gauge({
        name: 'aerie_redis_up',
        help: 'Whether Redis answered its last call (1) or not (0: limits are counted per process)',
        registers,
        collect() {
          this.set(redis.up ? 1 : 0);
        },
      });
      new Counter({
        name: 'aerie_redis_fallbacks_total',
        help: 'Rate-limit and login-throttle counts taken in memory because Redis did not answer',
        registers,
        collect() {
          this.reset();
          this.inc(redis.fallbacks);
        },
      });
    }
    const queued = () => this.queuedJobs();
    new Gauge({
      name: 'aerie_jobs_queued',
      help: 'Jobs waiting in the queue, by kind, read from the database when scraped',
      labelNames: ['kind'],
      registers,
      async collect() {
        this.reset();
        const counts = await queued();
        if (counts !== undefined) for (const [kind, n] of counts) this.set({ kind }, n);
      },
    });
  }

  /** Queue depth within the scrape's deadline; undefined (and a warning) when it cannot be read. */
  private async queuedJobs(): Promise<Map<string, number> | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const counts = await Promise.race([
        this.deps.queuedJobs(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('timed out')), this.deps.scrapeTimeoutMs ?? 2000);
        }),
      ]);
      const all = new Map(this.deps.jobKinds.map((kind) => [kind, 0]));
      for (const [kind, n] of counts) all.set(kind, n);
      return all;
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'metrics: could not read the queue depth');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One HTTP request; `route` is the matched route's pattern, or undefined when none matched. */
  observeRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    this.requestDuration.observe(
      { method: METHODS.has(method) ? method : 'OTHER', route: route ?? 'unmatched', status: String(status) },
      seconds,
    );
  }

  jobEnded(end: JobAttemptEnd): void {
    const kind = this.deps.jobKinds.includes(end.kind) ? end.kind : 'unknown';
    this.jobs.inc({ kind, outcome: end.outcome });
    this.jobDuration.observe({ kind, outcome: end.outcome }, end.durationMs / 1000);
    if (end.outcome !== 'succeeded' || end.bytes === null || end.bytes <= 0) return;
    if (kind === 'backup.create') this.backupBytesWritten.inc(end.bytes);
    else if (kind === 'backup.restore') this.backupBytesRestored.inc(end.bytes);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /**
   * Serves `GET /metrics` alone on a listener of its own (AERIE_METRICS_ADDRESS), apart from the
   * API, so that it can stay on a private address. Resolves once listening.
   */
  async listen(address: MetricsAddress): Promise<void> {
    // Loaded here: importing node:http as a module loads Node's fetch implementation with it
    // (its exports include WebSocket), 20 ms of every command's start-up that serves nothing.
    const { createServer } = createRequire(import.meta.url)('node:http') as typeof http;
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      if (path !== '/metrics')
        return answer(response, 404, 'NotFoundHttpException', 'Only /metrics is served here.');
      if (request.method !== 'GET' && request.method !== 'HEAD')
        return answer(response, 405, 'MethodNotAllowedHttpException', 'Only GET is allowed.', {
          allow: 'GET, HEAD',
        });
      this.scrape().then(
        ({ contentType, body }) => {
          response.writeHead(200, { 'content-type': contentType });
          response.end(request.method === 'HEAD' ? undefined : body);
        },
        (error: unknown) => {
          this.deps.logger.error({ err: error }, 'metrics: scrape failed');
          answer(response, 500, 'InternalServerError', 'The metrics could not be collected.');
        },
      );
    });
    server.requestTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, address.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** The port the metrics listener is bound to, when it is. */
  listeningPort(): number | undefined {
    const bound = this.server?.address();
    return typeof bound === 'object' && bound !== null ? bound.port : undefined;
  }

  /** Stops the metrics listener, if any. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function answer(
  response: http.ServerResponse,
  status: number,
  code: string,
  detail: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(JSON.stringify({ errors: [{ code, status: String(status), detail }] }));
}

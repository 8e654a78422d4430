import { createRequire } from 'node:module';
import type Pg from 'pg';
import type { Logger } from 'pino';
import type { RemoteJobSignal } from './job-wakeups.ts';

/** The PostgreSQL channel `JobRepository.enqueue` notifies, in the enqueuing transaction. */
export const JOBS_CHANNEL = 'aerie_jobs';

const FIRST_RETRY_MS = 100;
const LAST_RETRY_MS = 5000;

/**
 * Keeps one connection of its own (outside the pool: a pooled connection would be handed to
 * queries and lose its LISTEN) listening on `JOBS_CHANNEL`, and wakes the workers on each
 * notification. PostgreSQL delivers a NOTIFY when its transaction commits, so the job's row is
 * visible by then. When the connection drops it is opened again, sooner at first and then every
 * few seconds; each time it (re)starts listening the workers are woken once, for any job queued
 * while nobody listened. Between, the workers' poll still finds every job.
 */
export class PgJobListener implements RemoteJobSignal {
  private client: Pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Bumped by start and stop, so that a connection from an earlier start never reconnects. */
  private generation = 0;
  private retryMs = FIRST_RETRY_MS;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  start(wake: (sender: string) => void): void {
    this.generation += 1;
    this.retryMs = FIRST_RETRY_MS;
    this.listen(wake, this.generation);
  }

  async stop(): Promise<void> {
    this.generation += 1;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private listen(wake: (sender: string) => void, generation: number): void {
    const pg = createRequire(import.meta.url)('pg') as typeof Pg; // loaded by PostgreSQL users only
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    this.client = client;
    let dropped = false;
    const drop = (error?: Error) => {
      if (dropped) return;
      dropped = true;
      client.end().catch(() => undefined);
      if (generation !== this.generation) return;
      this.client = undefined;
      this.logger.warn(
        { err: error, retryInMs: this.retryMs },
        'the connection listening for queued jobs was lost; reconnecting (the poll goes on meanwhile)',
      );
      this.retry = setTimeout(() => this.listen(wake, generation), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, LAST_RETRY_MS);
    };
    // Without an 'error' listener, a connection the server ends would crash the process.
    client.on('error', drop);
    client.on('end', () => drop());
    client.on('notification', (message) => {
      if (generation === this.generation) wake(message.payload ?? '');
    });
    client
      .connect()
      .then(() => client.query(`LISTEN ${JOBS_CHANNEL}`))
      .then(
        () => {
          if (dropped || generation !== this.generation) return;
          this.retryMs = FIRST_RETRY_MS;
          wake(''); // jobs queued while no one listened
        },
        (error: unknown) => drop(error instanceof Error ? error : new Error(String(error))),
      );
  }
}

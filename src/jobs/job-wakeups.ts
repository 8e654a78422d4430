import { randomUUID } from 'node:crypto';

/** What tells this process about jobs queued elsewhere (on PostgreSQL: LISTEN, `PgJobListener`). */
export interface RemoteJobSignal {
  /**
   * Starts calling `wake` whenever another process may have queued a job, with the `sender` that
   * queued it (empty when unknown).
   */
  start(wake: (sender: string) => void): void;
  stop(): Promise<void>;
}

/**
 * Wakes the idle workers of this process when a job may be waiting, so that they claim it at once
 * instead of at their next poll. A wake-up is only a hint: the claim decides which worker, if any,
 * gets a job, and the poll still finds any job a wake-up missed.
 *
 * `JobRepository.enqueue` calls `notify` once the job's row is committed. Jobs queued by other
 * processes arrive through `remote`, which listens only while a worker here is subscribed (an
 * API-only process holds no listening connection).
 */
export class JobWakeups {
  private readonly listeners = new Set<() => void>();
  /**
   * Names this process's jobs on the remote signal: its own workers were woken in-process at the
   * commit, so the echo of its own NOTIFY is ignored.
   */
  readonly sender = randomUUID();

  constructor(private readonly remote?: RemoteJobSignal) {}

  notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Calls `listener` on every wake-up until the returned function is called. */
  subscribe(listener: () => void): () => Promise<void> {
    this.listeners.add(listener);
    if (this.listeners.size === 1)
      this.remote?.start((sender) => {
        if (sender !== this.sender) this.notify();
      });
    return async () => {
      if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
      await this.remote?.stop();
    };
  }

  /** Stops listening for other processes' jobs, whoever is still subscribed. */
  async close(): Promise<void> {
    this.listeners.clear();
    await this.remote?.stop();
  }
}

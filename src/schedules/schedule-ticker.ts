import type { Logger } from 'pino';
import type { ScheduleRunner } from './schedule-runner.ts';

export interface ScheduleTickerOptions {
  /** Between the end of one tick and the start of the next (AERIE_SCHEDULE_TICK_SECONDS). */
  intervalMs: number;
  /** How often, at most, runs left processing with no job are looked for. */
  recoverEveryMs?: number;
}

/**
 * The scheduler's tick, in each process that runs jobs (`serve --role all`, `worker`): every
 * `intervalMs` it has the runner start the schedules that are due, and about once a minute end the
 * runs left processing with no job to carry them. Every process ticks; the claims decide which
 * process starts each run. A failed tick is logged, and the next one tries again.
 */
export class ScheduleTicker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private lastRecovery = 0;
  private readonly recoverEveryMs: number;

  constructor(
    private readonly runner: ScheduleRunner,
    private readonly logger: Logger,
    private readonly options: ScheduleTickerOptions,
  ) {
    this.recoverEveryMs = options.recoverEveryMs ?? 60_000;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    // Soon, but not all at once when several processes start together.
    this.schedule(Math.floor(Math.random() * Math.min(this.options.intervalMs, 1000)));
  }

  /** Stops ticking; waits for a tick in progress to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One tick: the due schedules, and now and then the recovery. */
  async tickOnce(): Promise<void> {
    try {
      const report = await this.runner.tick();
      if (report.started.length > 0) this.logger.debug({ schedules: report }, 'schedule tick');
    } catch (error) {
      this.logger.warn({ err: error }, 'the schedule tick failed; the next one tries again');
    }
    if (Date.now() - this.lastRecovery < this.recoverEveryMs) return;
    this.lastRecovery = Date.now();
    await this.runner.recoverStuck().catch((error: unknown) => {
      this.logger.warn({ err: error }, 'could not look for schedule runs left processing');
    });
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tickOnce().finally(() => {
        this.running = undefined;
        this.schedule(this.options.intervalMs);
      });
    }, delay);
    this.timer.unref();
  }
}

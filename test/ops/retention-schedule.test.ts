import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RetentionSchedule, type RetentionService } from '../../src/ops/retention.service.ts';

/** A stand-in for the service that counts its runs; the first one fails. */
function countingService() {
  const runs: AbortSignal[] = [];
  const service = {
    runOnce(signal?: AbortSignal) {
      runs.push(signal!);
      if (runs.length === 1) return Promise.reject(new Error('database away'));
      return new Promise((resolve) => setTimeout(() => resolve(null), 20));
    },
  } as unknown as RetentionService;
  return { service, runs };
}

describe('the retention schedule', () => {
  it('runs soon after start, again after each interval even when a run failed, and stops with the run in hand', async () => {
    const { service, runs } = countingService();
    const schedule = new RetentionSchedule(service, pino({ level: 'silent' }), {
      firstRunWithinMs: 5,
      intervalMs: 30,
    });
    schedule.start();
    schedule.start(); // twice is once
    await new Promise((resolve) => setTimeout(resolve, 200));
    await schedule.stop();
    const seen = runs.length;
    expect(seen).toBeGreaterThanOrEqual(3);
    expect(seen).toBeLessThanOrEqual(6);
    expect(runs.at(-1)!.aborted).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(runs.length).toBe(seen);
  });
});

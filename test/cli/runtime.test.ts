/**
 * openRuntime, which every entry point (serve, worker, each CLI command, the test harness)
 * starts from: it migrates, and it picks the counter store from REDIS_URL whatever the role.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { THREAD_WORK, withRuntime } from '../../src/cli/with-runtime.ts';
import { loadConfig } from '../../src/config.ts';
import { openRuntime, type Runtime } from '../../src/runtime.ts';
import { MemoryCounterStore } from '../../src/shared/counter-store.ts';
import { FallbackCounterStore } from '../../src/shared/fallback-counter-store.ts';
import { testDatabase } from '../support/databases.ts';
import { REDIS_URL, serverAvailable } from '../support/dialects.ts';
import { growYoungGeneration, youngGenerationMiB } from '../support/young-generation.ts';

const opened: Runtime[] = [];
/** Each fresh data directory with its database (the suite's kind, see TEST_DATABASE). */
const dirs = new Map<string, Awaited<ReturnType<typeof testDatabase>>>();
afterEach(async () => {
  for (const runtime of opened.splice(0)) await runtime.close();
  for (const [dir, database] of dirs) {
    fs.rmSync(dir, { recursive: true, force: true });
    await database.drop();
  }
  dirs.clear();
});

function configIn(dir: string, env: Record<string, string> = {}) {
  return loadConfig({
    AERIE_DATA_DIR: dir,
    DATABASE_URL: dirs.get(dir)!.url,
    LOG_LEVEL: 'silent',
    ...env,
  });
}

async function freshDir(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-runtime-'));
  dirs.set(dir, await testDatabase(dir));
  return dir;
}

async function open(config: ReturnType<typeof loadConfig>): Promise<Runtime> {
  const runtime = await openRuntime(config);
  opened.push(runtime);
  return runtime;
}

describe('openRuntime', () => {
  it('migrates on opening and says what it applied', async () => {
    const config = configIn(await freshDir());
    const first = await open(config);
    expect(first.migrations.length).toBeGreaterThan(0);
    expect(await first.services.users.count()).toBe(0);
    await first.close();
    expect((await open(config)).migrations).toEqual([]);
  });

  it('keeps counters in memory without REDIS_URL', async () => {
    expect((await open(configIn(await freshDir()))).counters).toBeInstanceOf(MemoryCounterStore);
  });

  it('can be closed twice', async () => {
    const runtime = await openRuntime(configIn(await freshDir()));
    await runtime.close();
    await expect(runtime.close()).resolves.toBeUndefined();
  });
});

describe.runIf(await serverAvailable(REDIS_URL))('openRuntime with REDIS_URL', () => {
  it('counts in Redis, shared by every process on it, whatever the process runs', async () => {
    // Two processes on one database: say a `worker` and a CLI command.
    const dir = await freshDir();
    const worker = await open(configIn(dir, { REDIS_URL }));
    const cli = await open(configIn(dir, { REDIS_URL }));
    // In Redis, falling back to memory only while it does not answer.
    expect(worker.counters).toBeInstanceOf(FallbackCounterStore);
    expect(cli.counters).toBeInstanceOf(FallbackCounterStore);
    expect((worker.counters as FallbackCounterStore).up).toBe(true);

    const key = `runtime-test:${randomUUID()}`;
    await worker.counters.increment(key, 60_000);
    await cli.counters.increment(key, 60_000);
    expect((await worker.counters.peek(key)).count).toBe(2);
    await cli.counters.reset(key);
  });
});

describe('withRuntime', () => {
  it('gives back the young generation while a command waits on its threads, and only then', async () => {
    const dir = await freshDir();
    vi.stubEnv('AERIE_DATA_DIR', dir);
    vi.stubEnv('DATABASE_URL', dirs.get(dir)!.url);
    vi.stubEnv('LOG_LEVEL', 'silent');
    try {
      // A command that waits half a second on its threads, reading the young generation at the end.
      const waiting = async () => {
        await sleep(500);
        return youngGenerationMiB();
      };
      growYoungGeneration();
      const plain = await withRuntime(waiting);
      growYoungGeneration();
      const threaded = await withRuntime(waiting, THREAD_WORK);
      expect(plain).toBeGreaterThanOrEqual(8);
      expect(threaded).toBeLessThanOrEqual(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

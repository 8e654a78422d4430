import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import type { Logger } from 'pino';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import type { StatusRepository } from './status.repository.ts';

export type ReadinessCheck = 'database' | 'migrations' | 'storage';

/**
 * Each check's result: `ok`, or a few words on what is wrong (never an internal error message).
 * `redis` (present when REDIS_URL is set) does not count towards `ready`: without Redis every
 * request is still served, with limits counted per process, so the process stays in the load
 * balancer and says it is `degraded`.
 */
export interface Readiness {
  ready: boolean;
  /** Ready, but a dependency it can do without (Redis) is not answering. */
  degraded: boolean;
  checks: Record<ReadinessCheck, string> & { redis?: string };
}

/** What readiness says of a Redis that does not answer. */
export const REDIS_UNREACHABLE = 'unreachable; limits are counted per process';

export interface HealthDeps {
  status: StatusRepository;
  /** Every migration this build knows; the database must have run them all. */
  knownMigrations: readonly string[];
  /** Resolves when backup storage takes a write; rejects otherwise. */
  probeStorage: () => Promise<void>;
  /** Whether Redis answers (it logs a change itself); absent without REDIS_URL. */
  probeRedis?: () => Promise<boolean>;
  logger: Logger;
  /** How long one check may take before it counts as failed. */
  timeoutMs?: number;
  /** After the storage took a write, how long before it is written to again (failures are retried at once). */
  storageRecheckMs?: number;
}

class CheckFailed extends Error {}

/**
 * Readiness: whether this process can serve, checked afresh on every call and in parallel, each
 * check within a deadline so a probe gets its answer even while the database hangs. A check that
 * goes from passing to failing (and back) is logged once, with the underlying error.
 */
export class HealthService {
  private readonly timeoutMs: number;
  private readonly storageRecheckMs: number;
  private readonly failing = new Set<ReadinessCheck>();
  /** When the storage last took a write (performance.now()). */
  private storageOkAt: number | undefined;

  constructor(private readonly deps: HealthDeps) {
    this.timeoutMs = deps.timeoutMs ?? 2000;
    this.storageRecheckMs = deps.storageRecheckMs ?? 30_000;
  }

  async readiness(): Promise<Readiness> {
    const [database, migrations, storage, redis] = await Promise.all([
      this.check('database', 'unreachable', () => this.deps.status.ping()),
      this.check('migrations', 'could not be read', () => this.migrationsCurrent()),
      this.check('storage', 'not writable', () => this.storageWritable()),
      this.deps.probeRedis?.().then((answers) => (answers ? 'ok' : REDIS_UNREACHABLE)),
    ]);
    const checks = { database, migrations, storage };
    return {
      ready: Object.values(checks).every((result) => result === 'ok'),
      degraded: redis !== undefined && redis !== 'ok',
      checks: redis === undefined ? checks : { ...checks, redis },
    };
  }

  /** A probe write at most every `storageRecheckMs` while it succeeds; at every call once it fails. */
  private async storageWritable(): Promise<void> {
    const now = performance.now();
    if (this.storageOkAt !== undefined && now - this.storageOkAt < this.storageRecheckMs) return;
    this.storageOkAt = undefined;
    await this.deps.probeStorage();
    this.storageOkAt = performance.now();
  }

  private async migrationsCurrent(): Promise<void> {
    const executed = new Set(await this.deps.status.executedMigrations());
    const pending = this.deps.knownMigrations.filter((name) => !executed.has(name));
    if (pending.length > 0)
      throw new CheckFailed(`${pending.length} pending (${pending.join(', ')}); run aerie migrate`);
  }

  private async check(name: ReadinessCheck, failure: string, run: () => Promise<void>): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new CheckFailed(`timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    });
    try {
      await Promise.race([run(), deadline]);
      if (this.failing.delete(name)) this.deps.logger.info({ check: name }, 'readiness check passes again');
      return 'ok';
    } catch (error) {
      if (!this.failing.has(name)) {
        this.failing.add(name);
        this.deps.logger.warn({ check: name, err: error }, 'readiness check failed');
      }
      return error instanceof CheckFailed ? error.message : failure;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Where the readiness probe's objects go, apart from every server's backups. */
const PROBE = '.ready';

/**
 * Stores a small archive in the backup storage and deletes it again, through the same calls a
 * backup makes (a scratch file, then `put`): whether a backup could be stored now, in a local
 * directory or a bucket alike.
 */
export async function probeBackupStorage(storage: BackupStorage): Promise<void> {
  const id = randomUUID();
  const file = await storage.scratchFile(PROBE, id);
  try {
    await fs.writeFile(file, 'ready', { mode: 0o600 });
    await storage.put(PROBE, id, file);
  } finally {
    await fs.rm(file, { force: true });
  }
  await storage.delete(PROBE, id);
}

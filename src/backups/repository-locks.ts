/**
 * Locks on a server's snapshot repository, kept in the database every Aerie process shares, so
 * that they hold across processes and nodes. A backup holds a shared lock while it writes (any
 * number may); a prune holds an exclusive one (no backup meanwhile): a prune must never delete a
 * chunk that a backup running at the same time has found stored and is about to name.
 *
 * Each lock is a lease: its holder renews it while it works, and one left by a process that was
 * killed lapses after LEASE_MS, so a dead process never blocks a repository for long.
 *
 * Taking a lock is two steps, each its own committed statement: write our row, then look for a
 * row that conflicts with it. Two processes that do this at once each see the other's row (each
 * wrote before it looked), so at least one of them backs off; nobody needs a lock on the table
 * itself. A backup that meets a prune withdraws and waits for it; a prune that meets backups
 * keeps its row (which stops new backups) and waits for them to end; two prunes at once both
 * withdraw and try again after a random pause.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/connection.ts';
import { ConflictError } from '../shared/errors.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';

/** How long a lock lasts unless renewed. */
const LEASE_MS = 60_000;
/** How often a held lock is renewed. */
const RENEW_MS = 15_000;
/** How often a waiting lock looks again. */
const POLL_MS = 250;

export interface RepositoryLockOptions {
  /** How long to wait for the lock before giving up (a ConflictError). */
  waitMs?: number;
  signal?: AbortSignal;
}

export class RepositoryLocks {
  private readonly holder = `${hostname()}:${process.pid}`.slice(0, 255);

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Runs `work` holding a shared lock on `repository` (a backup writing into it). */
  shared<T>(repository: string, work: () => Promise<T>, options: RepositoryLockOptions = {}): Promise<T> {
    return this.holding(repository, false, work, options);
  }

  /** Runs `work` holding the only lock on `repository` (a prune). */
  exclusive<T>(repository: string, work: () => Promise<T>, options: RepositoryLockOptions = {}): Promise<T> {
    return this.holding(repository, true, work, options);
  }

  private async holding<T>(
    repository: string,
    exclusive: boolean,
    work: () => Promise<T>,
    options: RepositoryLockOptions,
  ): Promise<T> {
    const id = await this.acquire(repository, exclusive, options);
    const renewal = setInterval(() => {
      void this.renew(id).catch(() => undefined); // a lease not renewed lapses: the next try renews it
    }, RENEW_MS);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
      await this.release(id);
    }
  }

  private async acquire(
    repository: string,
    exclusive: boolean,
    options: RepositoryLockOptions,
  ): Promise<string> {
    const deadline = Date.now() + (options.waitMs ?? 10 * 60_000);
    for (;;) {
      options.signal?.throwIfAborted();
      const id = randomUUID();
      await this.db.kysely
        .insertInto('backup_repository_locks')
        .values({
          id,
          repository,
          exclusive: exclusive ? 1 : 0,
          holder: this.holder,
          expires_at: this.expiry(),
        })
        .execute();
      // Ours is in: now see who else is.
      for (;;) {
        const others = await this.live(repository, id);
        const prune = others.find((row) => Number(row.exclusive) === 1);
        if (!exclusive && prune === undefined) return id;
        if (exclusive && others.length === 0) return id;
        const giveUp = Date.now() > deadline || options.signal?.aborted === true;
        // A backup makes way for a prune; two prunes both withdraw. A prune waits out backups.
        if (!exclusive || prune !== undefined || giveUp) {
          await this.release(id);
          if (giveUp) {
            const who = (prune ?? others[0])?.holder ?? 'another process';
            throw new ConflictError(
              `The backup repository is busy (${exclusive ? 'in use' : 'being pruned'} by ${who}); try again later.`,
            );
          }
          await sleep(POLL_MS + (exclusive ? Math.random() * POLL_MS * 4 : 0));
          break;
        }
        await this.renew(id);
        await sleep(POLL_MS);
      }
    }
  }

  /** The unexpired locks on `repository` other than `id`. */
  private live(repository: string, id: string) {
    return this.db.kysely
      .selectFrom('backup_repository_locks')
      .select(['id', 'exclusive', 'holder'])
      .where('repository', '=', repository)
      .where('id', '!=', id)
      .where('expires_at', '>', toStoredTime(this.clock()))
      .execute();
  }

  private async renew(id: string): Promise<void> {
    await this.db.kysely
      .updateTable('backup_repository_locks')
      .set({ expires_at: this.expiry() })
      .where('id', '=', id)
      .execute();
  }

  /** Removes the lock `id`, and any lease that lapsed long ago (its holder was killed). */
  private async release(id: string): Promise<void> {
    await this.db.kysely.deleteFrom('backup_repository_locks').where('id', '=', id).execute();
    const long = toStoredTime(new Date(this.clock().getTime() - 10 * LEASE_MS));
    await this.db.kysely.deleteFrom('backup_repository_locks').where('expires_at', '<', long).execute();
  }

  private expiry(): string {
    return toStoredTime(new Date(this.clock().getTime() + LEASE_MS));
  }
}

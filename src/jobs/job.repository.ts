import type { DatabaseKind } from '../config.ts';
import { afterCommit, type Executor, type Transactor } from '../db/executor.ts';
import { insertReturningId } from '../db/insert-id.ts';
import { updatedOne } from '../db/row-count.ts';
import { sql, type ExpressionBuilder, type Transaction, type UpdateObject } from 'kysely';
import type { Database } from '../db/database.ts';
import { JOB_PRIORITY, type JobKind, type JobPayloads } from './job-kinds.ts';
import type { JobWakeups } from './job-wakeups.ts';
import { JOBS_CHANNEL } from './pg-job-listener.ts';
import type { JobRow } from './job.table.ts';

/**
 * A job to queue: its kind decides the shape of its payload. `runAt`, when given, is when it
 * becomes due (a later time than now: no worker claims it before); at once otherwise.
 */
export type NewJob = {
  [K in JobKind]: { kind: K; payload: JobPayloads[K]; batch: string; maxAttempts?: number; runAt?: string };
}[JobKind];

export class JobRepository {
  constructor(
    private readonly db: Executor,
    private readonly kind: DatabaseKind,
    private readonly transaction: Transactor,
    /** Told of each job queued here, once it is committed; none in tests of the queue alone. */
    private readonly wakeups?: JobWakeups,
  ) {}

  /**
   * Queues a job, in `db`'s transaction if it is one, for the workers of its server's node (a
   * job of no server is for any node's). Workers hear of it once it commits, not at their next
   * poll: those of this process through `wakeups`, and on PostgreSQL those of every process
   * through a NOTIFY, which PostgreSQL delivers at commit (and drops on rollback).
   */
  async enqueue(job: NewJob, now: string, db: Executor = this.db): Promise<number> {
    const serverId = serverOf(job);
    const id = await insertReturningId(
      this.kind,
      db.insertInto('jobs').values({
        kind: job.kind,
        payload: JSON.stringify(job.payload),
        state: 'queued',
        batch: job.batch,
        // Read in the enqueuing transaction; null when the job is of no server (or of none known).
        node:
          serverId === null
            ? null
            : db.selectFrom('servers').select('servers.node').where('servers.id', '=', serverId),
        priority: JOB_PRIORITY[job.kind],
        attempts: 0,
        max_attempts: job.maxAttempts ?? 3,
        run_at: job.runAt ?? now,
        lease_owner: null,
        lease_expires_at: null,
        error: null,
        created_at: now,
        updated_at: now,
        finished_at: null,
      }),
    );
    if (this.kind === 'postgres')
      await sql`select pg_notify(${JOBS_CHANNEL}, ${this.wakeups?.sender ?? ''})`.execute(db);
    const wakeups = this.wakeups;
    if (wakeups !== undefined) afterCommit(db, () => wakeups.notify());
    return id;
  }

  findById(id: number, db: Executor = this.db): Promise<JobRow | undefined> {
    return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Claims, of the due jobs (queued and past its `run_at`, or running on a lease that ran out at
   * `lease_expires_at`), the one of the lowest priority (a restore before backups: JOB_PRIORITY),
   * then the one due longest, ties going to the older job, for `owner`: of `node`'s servers or of
   * no server, or any job when `node` is not given. PostgreSQL and MariaDB skip rows other
   * workers hold locked; on every engine the UPDATE re-checks that the job is still claimable, so
   * two workers can never both win it.
   */
  async claim(owner: string, now: string, leaseUntil: string, node?: string): Promise<JobRow | undefined> {
    if (this.kind === 'sqlite') return this.claimOnSqlite(owner, now, leaseUntil, node);
    for (let tries = 0; tries < 5; tries++) {
      const claimed = await this.claimTransaction(async (trx) => {
        const candidate = await dueFirst(trx, now, node, this.locking()).executeTakeFirst();
        if (candidate === undefined) return null;
        const id = Number(candidate.id);
        const result = await trx
          .updateTable('jobs')
          .set((eb) => claimedBy(eb, owner, now, leaseUntil))
          .where('id', '=', id)
          .where((eb) => claimable(eb, now))
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== 1) return undefined;
        return this.findById(id, trx);
      });
      if (claimed === null) return undefined;
      if (claimed !== undefined) return { ...claimed, id: Number(claimed.id) };
    }
    return undefined;
  }

  /**
   * The claim's transaction. On MariaDB it reads committed data, as PostgreSQL's transactions
   * do: under MariaDB's default (repeatable read) the index ranges a claim reads would also be
   * locked against inserts (gap locks), and two workers each claiming a job, whose UPDATEs move
   * entries into ranges the other had read, would deadlock.
   */
  private claimTransaction<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    if (this.kind === 'mysql' && !this.db.isTransaction)
      return this.db.transaction().setIsolationLevel('read committed').execute(work);
    return this.transaction(work);
  }

  /** How the claim's SELECT locks what it finds (see `dueFirst`). */
  private locking(): Locking {
    return this.kind === 'sqlite'
      ? 'none'
      : this.kind === 'postgres'
        ? 'wait-for-lost-leases'
        : 'skip-locked';
  }

  /**
   * The query that picks the job a claim takes (see `dueFirst`), for EXPLAIN: what it reads
   * depends on the plan the database chooses for it.
   */
  candidateQuery(now: string, node?: string, db: Executor = this.db) {
    return dueFirst(db, now, node, this.locking());
  }

  /**
   * SQLite has no row locks: the claim is one UPDATE … RETURNING. A statement that writes takes
   * the database's write lock before it reads (waiting out busy_timeout), so worker processes
   * sharing the file queue up. A transaction that read first and wrote second would instead fail
   * with SQLITE_BUSY whenever another process committed in between.
   */
  private async claimOnSqlite(
    owner: string,
    now: string,
    leaseUntil: string,
    node: string | undefined,
  ): Promise<JobRow | undefined> {
    const row = await this.db
      .updateTable('jobs')
      .set((eb) => claimedBy(eb, owner, now, leaseUntil))
      .where('id', '=', dueFirst(this.db, now, node, this.locking()))
      .where((eb) => claimable(eb, now))
      .returningAll()
      .executeTakeFirst();
    return row && { ...row, id: Number(row.id) };
  }

  /** Extends the lease; false when the job is no longer this owner's (its lease ran out and was taken). */
  heartbeat(id: number, owner: string, now: string, leaseUntil: string): Promise<boolean> {
    return this.updateOwnRunning(id, owner, { lease_expires_at: leaseUntil, updated_at: now });
  }

  finish(
    id: number,
    owner: string,
    state: 'succeeded' | 'failed',
    error: string | null,
    now: string,
    db: Executor = this.db,
  ): Promise<boolean> {
    return this.updateOwnRunning(
      id,
      owner,
      { state, error, finished_at: now, updated_at: now, lease_expires_at: null },
      db,
    );
  }

  /** Sets `values` on a running job while `owner` holds it; false when it no longer does. */
  private updateOwnRunning(
    id: number,
    owner: string,
    values: UpdateObject<Database, 'jobs'>,
    db: Executor = this.db,
  ): Promise<boolean> {
    return updatedOne(
      db
        .updateTable('jobs')
        .set(values)
        .where('id', '=', id)
        .where('lease_owner', '=', owner)
        .where('state', '=', 'running'),
    );
  }

  /**
   * Puts a job back in the queue to be tried again at `runAt`. With `unreachableSince`, the try
   * failed because the backup store or the database could not be reached (the first such failure
   * of the job was then): it is counted in `unreachable_retries`, not against `max_attempts`.
   */
  async retryLater(
    id: number,
    owner: string,
    error: string,
    runAt: string,
    now: string,
    unreachableSince?: string,
  ): Promise<void> {
    await this.db
      .updateTable('jobs')
      .set((eb) => ({
        state: 'queued',
        error,
        run_at: runAt,
        lease_owner: null,
        lease_expires_at: null,
        updated_at: now,
        ...(unreachableSince === undefined
          ? {}
          : {
              unreachable_at: unreachableSince,
              unreachable_retries: eb('unreachable_retries', '+', 1),
            }),
      }))
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .execute();
  }
}

/** Due and queued, or running on a lease that has run out. */
function claimable(eb: ExpressionBuilder<Database, 'jobs'>, now: string) {
  return eb.or([
    eb.and([eb('state', '=', 'queued'), eb('run_at', '<=', now)]),
    eb.and([eb('state', '=', 'running'), eb('lease_expires_at', '<', now)]),
  ]);
}

/** How a claim's SELECT locks the rows it finds: SQLite has no row locks. */
type Locking = 'none' | 'skip-locked' | 'wait-for-lost-leases';

/** A job of `node`'s servers, or of no server. */
function ofNode(eb: ExpressionBuilder<Database, 'jobs'>, node: string) {
  return eb.or([eb('node', '=', node), eb('node', 'is', null)]);
}

/**
 * The id of the job to claim, of the lowest priority and then due longest: the first of a few
 * branches, each of which reads one index in its own order and stops at its first row. `node`'s
 * queued jobs come from (node, state, priority, run_at) and those of no server from the same index
 * under null; without a node, queued jobs come from (state, priority, run_at). Jobs whose lease
 * ran out come from (state, lease_expires_at), which holds only the running jobs, in the order
 * their leases ran out (there are few: their workers died). One filter over all of these (an OR, ordered by id) would leave the database
 * to guess how many of the queued jobs are this node's, and on PostgreSQL, with many queued for
 * other nodes, the guess had it read the primary key through every one of them.
 *
 * Locking (PostgreSQL and MariaDB): each branch locks the row it returns, at most one, until the
 * claim's transaction ends, and the queued branches skip rows other workers hold locked (FOR
 * UPDATE SKIP LOCKED): those are being claimed. On PostgreSQL the lease branch waits for a locked
 * row instead (FOR UPDATE): a running job's row is locked only for a moment, by its worker's
 * heartbeat or another claim, and once that commits the row is checked again, so a lease that ran
 * out is not passed over because a heartbeat was being written just then. On MariaDB it skips
 * too: there a locking range read also locks the entry just past its range (a running job that
 * another claim is taking), and racing claims that waited there deadlocked.
 */
function dueFirst(db: Executor, now: string, node: string | undefined, locking: Locking) {
  const lock = locking !== 'none';
  const queued = (of: string | null | undefined) =>
    db
      .selectFrom('jobs')
      .select(['id', 'priority', 'run_at as due'])
      .$if(of !== undefined, (q) => q.where('node', of === null ? 'is' : '=', of ?? null))
      .where('state', '=', 'queued')
      .where('run_at', '<=', now)
      .orderBy('priority')
      .orderBy('run_at')
      .orderBy('id')
      .limit(1)
      .$if(lock, (q) => q.forUpdate().skipLocked());
  const leaseLost = db
    .selectFrom('jobs')
    .select((eb) => ['id', 'priority', eb.ref('lease_expires_at').$castTo<string>().as('due')])
    .where('state', '=', 'running')
    .where('lease_expires_at', '<', now)
    .$if(node !== undefined, (q) => q.where((eb) => ofNode(eb, node!)))
    .orderBy('lease_expires_at')
    .orderBy('id')
    .limit(1)
    .$if(lock, (q) => q.forUpdate())
    .$if(locking === 'skip-locked', (q) => q.skipLocked());
  const branches =
    node === undefined ? [queued(undefined), leaseLost] : [queued(node), queued(null), leaseLost];
  // Each branch in a subquery of its own: a member of a UNION may have neither ORDER BY nor LIMIT
  // on SQLite, nor a locking clause on PostgreSQL.
  const [first, ...rest] = branches.map((branch, i) => db.selectFrom(branch.as(`branch_${i}`)).selectAll());
  const union = rest.reduce((all, next) => all.unionAll(next), first!);
  return db
    .selectFrom(union.as('candidates'))
    .select('candidates.id')
    .orderBy('candidates.priority')
    .orderBy('candidates.due')
    .orderBy('candidates.id')
    .limit(1);
}

/** The server a job is about, from its payload; null for a kind of job that has none. */
function serverOf(job: NewJob): string | null {
  const payload: object = job.payload;
  return 'serverId' in payload && typeof payload.serverId === 'string' ? payload.serverId : null;
}

function claimedBy(eb: ExpressionBuilder<Database, 'jobs'>, owner: string, now: string, leaseUntil: string) {
  return {
    state: 'running' as const,
    lease_owner: owner,
    lease_expires_at: leaseUntil,
    attempts: eb('attempts', '+', 1),
    updated_at: now,
  };
}

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Db } from '../../src/db/connection.ts';
import { transactorFor } from '../../src/db/executor.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { JobRepository } from '../../src/jobs/job.repository.ts';
import { SERVER_DIALECT_CASES, scratchDatabase, type ScratchDatabase } from '../support/dialects.ts';

const JOBS = 60;
const WORKERS = 8;
const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

// The queue is shared by every worker of a deployment; on PostgreSQL and MariaDB those race
// over real connections, so the claim is proven there, not only on SQLite.
for (const dialect of SERVER_DIALECT_CASES)
  describe.runIf(dialect.available)(`job claims on ${dialect.kind}`, () => {
    let scratch: ScratchDatabase;
    let db: Db;
    let jobs: JobRepository;

    beforeAll(async () => {
      scratch = await scratchDatabase(dialect);
      db = connect({ kind: dialect.kind, url: scratch.url, sqlitePath: null });
      await migrateToLatest(db);
      jobs = new JobRepository(db.kysely, db.kind, transactorFor(db.kysely));
    });
    afterAll(async () => {
      await db.destroy();
      await scratch.drop();
    });

    it('gives every job to exactly one of many racing workers', async () => {
      for (let i = 0; i < JOBS; i++) {
        await jobs.enqueue(
          { kind: 'backup.restore', payload: { i } as never, batch: randomUUID() },
          iso(-1000),
        );
      }
      const claimedBy = new Map<number, string[]>();
      await Promise.all(
        Array.from({ length: WORKERS }, async (_, w) => {
          const owner = `worker-${w}`;
          for (;;) {
            const job = await jobs.claim(owner, iso(), iso(60_000));
            if (job === undefined) {
              // A claim can lose every race it tries; only stop once nothing is left queued.
              const left = await db.kysely
                .selectFrom('jobs')
                .select((eb) => eb.fn.countAll<number>().as('n'))
                .where('state', '=', 'queued')
                .executeTakeFirstOrThrow();
              if (Number(left.n) === 0) return;
              continue;
            }
            claimedBy.set(job.id, [...(claimedBy.get(job.id) ?? []), owner]);
            expect(await jobs.finish(job.id, owner, 'succeeded', null, iso())).toBe(true);
          }
        }),
      );
      expect(claimedBy.size).toBe(JOBS);
      for (const owners of claimedBy.values()) expect(owners).toHaveLength(1);
      // More than one worker did work: the claims really raced.
      expect(new Set([...claimedBy.values()].flat()).size).toBeGreaterThan(1);
    });

    it('hands a job whose lease ran out to another worker, and the first loses it', async () => {
      const id = await jobs.enqueue(
        { kind: 'backup.restore', payload: {} as never, batch: randomUUID() },
        iso(-1000),
      );
      const first = await jobs.claim('first', iso(), iso(-1));
      expect(first?.id).toBe(id);
      const second = await jobs.claim('second', iso(), iso(60_000));
      expect(second?.id).toBe(id);
      expect(second?.attempts).toBe(2);
      expect(await jobs.heartbeat(id, 'first', iso(), iso(60_000))).toBe(false);
      expect(await jobs.finish(id, 'first', 'succeeded', null, iso())).toBe(false);
      expect(await jobs.finish(id, 'second', 'succeeded', null, iso())).toBe(true);
    });
  });

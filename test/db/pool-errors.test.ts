import { sql } from 'kysely';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Db } from '../../src/db/connection.ts';
import type { Executor } from '../../src/db/executor.ts';
import { isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import {
  SERVER_DIALECTS,
  scratchDatabase,
  serverAvailable,
  type ScratchDatabase,
} from '../support/dialects.ts';

const postgres = SERVER_DIALECTS.find((d) => d.kind === 'postgres')!;
const mariadb = SERVER_DIALECTS.find((d) => d.kind === 'mysql')!;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ends a PostgreSQL session from another connection, as a restart or an administrator does. */
async function terminatePostgres(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: postgres.url });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query('select pg_terminate_backend($1)', [pid]);
  await admin.end();
  // The session's end reaches its client a moment later.
  await sleep(200);
}

async function killMysql(id: number): Promise<void> {
  const admin = await createConnection(mariadb.url);
  await admin.query(`kill connection ${Number(id)}`);
  await admin.end();
  await sleep(200);
}

describe.runIf(await serverAvailable(postgres.url))('a PostgreSQL connection closed by the server', () => {
  let scratch: ScratchDatabase;
  let db: Db;
  beforeAll(async () => {
    scratch = await scratchDatabase(postgres);
    db = connect({ kind: 'postgres', url: scratch.url, sqlitePath: null });
  });
  afterAll(async () => {
    await db.destroy();
    await scratch.drop();
  });

  it('is replaced on the next query instead of crashing the process', async () => {
    const before = await db.kysely
      .selectNoFrom((eb) => eb.fn<number>('pg_backend_pid', []).as('pid'))
      .executeTakeFirstOrThrow();
    // What a server restart or an administrator does to an idle pooled connection.
    await terminatePostgres(before.pid);
    const after = await db.kysely
      .selectNoFrom((eb) => eb.fn<number>('pg_backend_pid', []).as('pid'))
      .executeTakeFirstOrThrow();
    expect(after.pid).not.toBe(before.pid);
  });

  // pg-pool listens for errors on idle clients only: one checked out for a transaction, its
  // session ended between two statements, used to emit an 'error' nobody heard, which ended
  // the process (here, the test run, as an unhandled error).
  it('fails a transaction whose session ends between statements, and the next query gets a new one', async () => {
    let pid = 0;
    const outcome = await db.kysely
      .transaction()
      .execute(async (trx) => {
        pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
        await terminatePostgres(pid);
        await sql`select 1`.execute(trx);
      })
      .then(
        () => 'committed',
        (error: unknown) => error,
      );
    expect(isDatabaseUnavailable(outcome), String(outcome)).toBe(true);
    const after = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely);
    expect(after.rows[0]!.pid).not.toBe(pid);
  });

  it('throws the error the work threw, not the rollback that the lost session refused', async () => {
    const failure = new Error('the work failed');
    const outcome = await db.kysely
      .transaction()
      .execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        await terminatePostgres(rows[0]!.pid);
        throw failure;
      })
      .catch((error: unknown) => error);
    expect(outcome).toBe(failure);
    await expect(sql`select 1`.execute(db.kysely)).resolves.toBeDefined();
  });
});

describe.runIf(await serverAvailable(mariadb.url))('a MariaDB connection killed by the server', () => {
  let scratch: ScratchDatabase;
  let db: Db;
  beforeAll(async () => {
    scratch = await scratchDatabase(mariadb);
    db = connect({ kind: 'mysql', url: scratch.url, sqlitePath: null });
  });
  afterAll(async () => {
    await db.destroy();
    await scratch.drop();
  });

  const connectionId = async (executor: Executor) =>
    (await sql<{ id: number }>`select connection_id() as id`.execute(executor)).rows[0]!.id;

  it('is replaced on the next query, idle or inside a transaction', async () => {
    const idle = await connectionId(db.kysely);
    await killMysql(idle);
    expect(await connectionId(db.kysely)).not.toBe(idle);

    let inTransaction = 0;
    const outcome = await db.kysely
      .transaction()
      .execute(async (trx) => {
        inTransaction = await connectionId(trx);
        await killMysql(inTransaction);
        await sql`select 1`.execute(trx);
      })
      .then(
        () => 'committed',
        (error: unknown) => error,
      );
    expect(isDatabaseUnavailable(outcome), String(outcome)).toBe(true);
    expect(await connectionId(db.kysely)).not.toBe(inTransaction);
  });

  it('throws the error the work threw, not the rollback that the lost connection refused', async () => {
    const failure = new Error('the work failed');
    const outcome = await db.kysely
      .transaction()
      .execute(async (trx) => {
        await killMysql(await connectionId(trx));
        throw failure;
      })
      .catch((error: unknown) => error);
    expect(outcome).toBe(failure);
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Db } from '../../src/db/connection.ts';
import {
  SERVER_DIALECTS,
  scratchDatabase,
  serverAvailable,
  type ScratchDatabase,
} from '../support/dialects.ts';

const postgres = SERVER_DIALECTS.find((d) => d.kind === 'postgres')!;

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
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('select pg_terminate_backend($1)', [before.pid]);
    await admin.end();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await db.kysely
      .selectNoFrom((eb) => eb.fn<number>('pg_backend_pid', []).as('pid'))
      .executeTakeFirstOrThrow();
    expect(after.pid).not.toBe(before.pid);
  });
});

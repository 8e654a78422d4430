/**
 * What the pools do when the database drops a connection (a restart, a failover, an
 * administrator ending sessions, a network fault): the process goes on, the statement or
 * transaction in flight fails with an error `isDatabaseUnavailable` recognises, the dead
 * connection is thrown away, and the next query gets a fresh one.
 */
import type { Driver, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type * as Mysql from 'mysql2';
import type Pg from 'pg';
import { isDatabaseUnavailable, markDatabaseUnavailable } from './unavailable.ts';

/**
 * The pg pool as the query builder uses it, made safe against lost connections.
 *
 * pg-pool listens for errors only on idle clients: a client handed out (to a query, or held
 * through a whole transaction) that loses its server between two statements emits 'error' with
 * no listener, and Node ends the process for it. So every client gets a listener of its own
 * when the pool opens it, for all its life; a client that emitted one is remembered as lost.
 *
 * pg reports a lost connection without a code ("Connection terminated unexpectedly", "Client has
 * encountered a connection error and is not queryable", its pool's connect timeout), or with
 * the socket's code, which says nothing of whom the socket was talking to. Such errors are
 * marked here, where it is known that they came from the database: any failure to connect that
 * the server did not answer itself, and any failure of a query on a client that was lost. An
 * error the server answered (a `DatabaseError`, with its SQLSTATE) is left to its code.
 */
export function lossTolerantPostgresPool(
  pool: Pg.Pool,
  DatabaseError: typeof Pg.DatabaseError,
): PostgresPool {
  const lost = new WeakSet<Pg.PoolClient>();
  // An idle client that fails is dropped from the pool and this event follows; the listener
  // below has already seen the error, and there is nothing more to do.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => lost.add(client));
    client.on('end', () => lost.add(client));
  });
  const fromServer = (error: unknown) => error instanceof DatabaseError;
  // The query builder keeps its own state per client object, so each client keeps one wrapper.
  const wrappers = new WeakMap<Pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: Pg.PoolClient): PostgresPoolClient => ({
    query: (async <R>(sql: string, parameters: readonly unknown[]) => {
      try {
        return (await client.query(sql, [...parameters])) as unknown as PostgresQueryResult<R>;
      } catch (error) {
        if (error instanceof Error && !fromServer(error) && lost.has(client)) markDatabaseUnavailable(error);
        throw error;
      }
    }) as PostgresPoolClient['query'],
    release: () => client.release(),
  });
  return {
    connect: async () => {
      let client: Pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        if (error instanceof Error && !fromServer(error)) markDatabaseUnavailable(error);
        throw error;
      }
      let wrapper = wrappers.get(client);
      if (wrapper === undefined) {
        wrapper = wrap(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/**
 * mysql2's pool removes a connection at its first 'error' with a one-time listener; a second
 * error from the same connection (the server's "connection killed" packet, then the socket
 * closing) would have none. Each connection keeps a listener for all its life. mysql2 marks the
 * errors of a lost connection `fatal` and gives the server's their codes, so they need no mark.
 */
export function lossTolerantMysqlPool(pool: Mysql.Pool): Mysql.Pool {
  pool.on('connection', (connection) => {
    connection.on('error', () => undefined);
  });
  return pool;
}

/**
 * The query builder rolls back a transaction whose work failed, and when the connection is gone
 * the rollback fails too and its error ("not queryable") replaces the one that explains what
 * happened. The server has already discarded the transaction of a session that ended, so a
 * rollback that fails for the connection being lost is let go, and the first error is the one
 * thrown.
 */
export function withMootRollback(driver: Driver): Driver {
  const rollback = driver.rollbackTransaction.bind(driver);
  driver.rollbackTransaction = async (connection) => {
    try {
      await rollback(connection);
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
    }
  };
  return driver;
}

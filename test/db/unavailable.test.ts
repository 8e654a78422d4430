import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable, markDatabaseUnavailable } from '../../src/db/unavailable.ts';

const withFields = (fields: Record<string, unknown>, message = 'failed') =>
  Object.assign(new Error(message), fields);

describe('isDatabaseUnavailable', () => {
  it.each([
    ['PostgreSQL shutting down (57P01)', { code: '57P01' }],
    ['PostgreSQL starting up (57P03)', { code: '57P03' }],
    ['PostgreSQL connection failure (08006)', { code: '08006' }],
    ['PostgreSQL out of connections (53300)', { code: '53300' }],
    ['mysql2 connection lost', { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }],
    ['MariaDB connection killed, which mysql2 has no name for', { errno: 1927, code: undefined }],
    ['MySQL server shutdown', { code: 'ER_SERVER_SHUTDOWN', errno: 1053 }],
    ["mysql2's closed-state error, fatal without a code", { fatal: true }],
  ])('is true for %s', (_, fields) => {
    expect(isDatabaseUnavailable(withFields(fields))).toBe(true);
  });

  it.each([
    ['a unique violation', { code: '23505' }],
    ['a protocol violation, which is a bug (08P01)', { code: '08P01' }],
    ['a deadlock', { code: '40P01' }],
    ['a MySQL duplicate key', { code: 'ER_DUP_ENTRY', errno: 1062 }],
    ["a socket error nobody said came from the database (the backup store's, say)", { code: 'ECONNREFUSED' }],
    ['a Node errno, which is negative', { errno: -111 }],
  ])('is false for %s', (_, fields) => {
    expect(isDatabaseUnavailable(withFields(fields))).toBe(false);
  });

  it('is true for an error the pool marked, whatever its code', () => {
    expect(
      isDatabaseUnavailable(markDatabaseUnavailable(new Error('Connection terminated unexpectedly'))),
    ).toBe(true);
    expect(isDatabaseUnavailable(markDatabaseUnavailable(withFields({ code: 'ECONNRESET' })))).toBe(true);
  });

  it('looks through causes, not forever', () => {
    const inner = withFields({ code: '57P01' });
    expect(isDatabaseUnavailable(new Error('timed out', { cause: inner }))).toBe(true);
    const loop = new Error('a') as Error & { cause?: unknown };
    loop.cause = new Error('b', { cause: loop });
    expect(isDatabaseUnavailable(loop)).toBe(false);
  });

  it('is false for what is not an error', () => {
    expect(isDatabaseUnavailable({ code: '57P01' })).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});

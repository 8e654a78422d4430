/**
 * Users' integer ids: a database made before they existed gets them on upgrade, in the order
 * its users were made, and users created at the same moment never share one — on every engine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/connection.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { UserRepository } from '../../src/users/user.repository.ts';
import { UserService } from '../../src/users/user.service.ts';
import { ALL_DIALECT_CASES, emptyDatabase } from '../support/dialects.ts';
import { migrateThrough } from '../support/migrations.ts';

const CASES = ALL_DIALECT_CASES;

describe.each(CASES)('user numbers on $kind', ({ kind, url, available }) => {
  let db: Db;
  let database: Awaited<ReturnType<typeof emptyDatabase>> | undefined;

  beforeAll(async () => {
    if (!available) return;
    database = await emptyDatabase({ kind, url, available });
    db = database.db;
  });
  afterAll(async () => {
    await database?.close();
  });

  it.runIf(available)(
    'numbers existing users on upgrade, then new ones after them, never twice',
    async () => {
      // A database as the first release left it, with three users made out of name order.
      await migrateThrough(db, '2026_11_22_000000_initial');
      const old = [
        ['c-uuid', 'carol', '2026-01-01T00:00:00.000Z'],
        ['a-uuid', 'alice', '2026-01-02T00:00:00.000Z'],
        ['b-uuid', 'bob', '2026-01-03T00:00:00.000Z'],
      ];
      for (const [id, username, created] of old) {
        await db.kysely
          .insertInto('users')
          .values({
            id: id!,
            username: username!,
            email: `${username}@example.com`,
            password_hash: 'x',
            first_name: username!,
            last_name: '',
            language: 'en',
            root_admin: 0,
            created_at: created!,
            updated_at: created!,
          } as never)
          .execute();
      }

      await migrateToLatest(db);
      const numbered = await db.kysely
        .selectFrom('users')
        .select(['id', 'number'])
        .orderBy('number')
        .execute();
      expect(numbered.map((row) => [row.id, Number(row.number)])).toEqual([
        ['c-uuid', 1],
        ['a-uuid', 2],
        ['b-uuid', 3],
      ]);

      const users = new UserService(new UserRepository(db.kysely, kind), () => new Date());
      const made = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          users.create({ username: `new${i}`, email: `new${i}@example.com`, password: 'long enough' }),
        ),
      );
      const numbers = made.map(({ user }) => user.number);
      expect(new Set(numbers).size).toBe(12);
      expect(Math.min(...numbers)).toBeGreaterThan(3);
      for (const { user } of made) {
        expect((await users.findByLogin(user.username))?.number).toBe(user.number);
      }
    },
  );
});

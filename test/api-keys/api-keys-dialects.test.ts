import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_DIALECT_CASES, scratchDatabase, type ScratchDatabase } from '../support/dialects.ts';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';

// On SQLite one connection serialises every transaction; PostgreSQL and MariaDB run the
// requests on a pool of connections at once, so only the user-row lock keeps the limit.
for (const dialect of SERVER_DIALECT_CASES)
  describe.runIf(dialect.available)(`the 25-key limit on ${dialect.kind}`, () => {
    let scratch: ScratchDatabase;
    let app: TestApp;

    beforeAll(async () => {
      scratch = await scratchDatabase(dialect);
      app = await startTestApp({ databaseUrl: scratch.url });
    });
    afterAll(async () => {
      await app.close();
      await scratch.drop();
    });

    it('holds when many keys are created at once', async () => {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      for (let i = 1; i < 20; i++) await createApiKey(app, user);
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          app.http.inject({
            method: 'POST',
            url: '/api/client/account/api-keys',
            headers: bearer(token),
            payload: { description: `concurrent ${i}` },
          }),
        ),
      );
      const statuses = responses.map((r) => r.statusCode).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 400)).toHaveLength(7);
      const count = await app.db.kysely
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', user.id)
        .executeTakeFirstOrThrow();
      expect(Number(count.n)).toBe(25);
    });

    it('serves a feed with filters and paging', async () => {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      for (let i = 0; i < 4; i++) await createApiKey(app, user);
      const res = await app.http.inject({
        method: 'GET',
        url: '/api/client/activity?filter[event]=API-KEY&per_page=2&page=2&sort=timestamp',
        headers: bearer(token),
      });
      expect(res.statusCode).toBe(200);
      const body = res.json<{ data: unknown[]; meta: { pagination: Record<string, number> } }>();
      expect(body.meta.pagination).toMatchObject({
        total: 5,
        count: 2,
        per_page: 2,
        current_page: 2,
        total_pages: 3,
      });
    });
  });

/**
 * The feed's filters give the same answers on SQLite, PostgreSQL and MariaDB: one set of entries
 * written through Aerie's own insert, many filter, sort and page combinations, each compared with
 * what the filter means (computed here, in plain code) — so every engine agrees with the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRepository } from '../../src/activity/activity.repository.ts';
import { SERVER_DIALECT_CASES, scratchDatabase, type ScratchDatabase } from '../support/dialects.ts';
import { createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { clearActivity, feed, type FeedBody } from '../support/activity.ts';

const CASES = [
  { kind: 'sqlite', server: undefined, available: true },
  ...SERVER_DIALECT_CASES.map((server) => ({ kind: server.kind, server, available: server.available })),
];

const EVENTS = ['auth:login', 'user:api-key.create', 'auth:fail', 'x:a_b', 'x:50%off', 'x:bang!', 'X:MiXeD'];
const IPS = ['10.0.0.1', '10.0.1.2', '192.168.10.1', 'ABCD::1', 'abcd::2', null];

interface Entry {
  n: number;
  event: string;
  ip: string | null;
  actor: 'viewer' | 'other' | null;
}
/** 42 entries, two to a timestamp (so ties are broken by insertion order). */
const ENTRIES: Entry[] = Array.from({ length: 42 }, (_, n) => ({
  n,
  event: EVENTS[n % EVENTS.length]!,
  ip: IPS[n % IPS.length]!,
  actor: (['viewer', 'other', null] as const)[n % 3]!,
}));

const QUERIES = [
  '',
  'sort=timestamp',
  'per_page=5&page=3',
  'per_page=5&page=9&sort=timestamp',
  'per_page=100&page=2',
  ...['api-key', 'AUTH', '%', '_', '!', 'a_b', '50%', 'mixed', 'nothing', ''].map(
    (e) => `filter[event]=${encodeURIComponent(e)}&per_page=100`,
  ),
  ...['10.0', 'abcd', 'ABCD::', '_', '.', '1', '%'].map(
    (ip) => `filter[ip]=${encodeURIComponent(ip)}&per_page=100`,
  ),
  'filter[actor_id]=system&per_page=100',
  'filter[actor_id]=VIEWER&per_page=100',
  'filter[actor_id]=OTHER&per_page=100',
  'filter[actor_id]=VIEWER&filter[event]=auth&filter[ip]=10.&per_page=3&page=2&sort=timestamp',
];

/** What a query should answer: the entries' numbers in order, and the total. */
function expected(query: string, admin: boolean): { ns: number[]; total: number } {
  const params = new URLSearchParams(query);
  const has = (value: string | null, part: string) =>
    (value ?? '').toLowerCase().includes(part.toLowerCase());
  const event = params.get('filter[event]');
  const ip = params.get('filter[ip]');
  const actor = params.get('filter[actor_id]');
  let rows = ENTRIES.filter(
    (e) =>
      (!event || has(e.event, event)) &&
      (!ip || (ip !== null && e.ip !== null && has(e.ip, ip) && (admin || e.actor === 'viewer'))) &&
      (actor === null ||
        (actor === 'system' ? e.actor === null : e.actor === (actor === 'VIEWER' ? 'viewer' : 'other'))),
  );
  if (params.get('sort') !== 'timestamp') rows = rows.reverse();
  const perPage = Number(params.get('per_page') ?? 25);
  const page = Number(params.get('page') ?? 1);
  return { ns: rows.slice((page - 1) * perPage, page * perPage).map((e) => e.n), total: rows.length };
}

for (const dialect of CASES)
  describe.runIf(dialect.available)(`feed filters on ${dialect.kind}`, () => {
    let scratch: ScratchDatabase | undefined;
    let app: TestApp;

    beforeAll(async () => {
      if (dialect.server) scratch = await scratchDatabase(dialect.server);
      app = await startTestApp(scratch ? { databaseUrl: scratch.url } : {});
    });
    afterAll(async () => {
      await app.close();
      await scratch?.drop();
    });

    it('answers every filter, sort and page as the filter means it', async () => {
      for (const admin of [false, true]) {
        const viewer = await createUser(app, { admin });
        const other = await createUser(app);
        const { token } = await createApiKey(app, viewer);
        await clearActivity(app);
        const repository = new ActivityRepository(app.db.kysely, app.db.kind);
        for (const e of ENTRIES) {
          await repository.insert({
            batch: '00000000-0000-4000-8000-000000000000',
            event: e.event,
            ip: e.ip,
            actorId: e.actor === 'viewer' ? viewer.id : e.actor === 'other' ? other.id : null,
            apiKeyId: null,
            properties: { n: e.n },
            timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, Math.floor(e.n / 2))).toISOString(),
            subjects: [{ type: 'user', id: viewer.id }],
          });
        }
        for (const query of QUERIES) {
          const url = query.replace('VIEWER', viewer.id).replace('OTHER', other.id.toUpperCase());
          const body: FeedBody = await feed(app, token, url);
          const got = {
            ns: body.data.map((d) => d.attributes.properties.n),
            total: body.meta.pagination.total,
          };
          expect(got, `${admin ? 'admin' : 'user'}: ${query}`).toEqual(expected(query, admin));
        }
      }
    });
  });

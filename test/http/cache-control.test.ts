/**
 * What an authenticated request returns (a TOTP secret, recovery tokens, an API key's secret,
 * signed links) must never be kept by a browser or a cache: every API answer says
 * `Cache-Control: no-store`, errors included, and so do the login's. The panel's page and assets
 * keep their own caching (test/web/panel-serving.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupOf, tempDir } from '../support/archives.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { PASSWORD } from '../support/two-factor.ts';

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

function expectNoStore(res: Answer, what: string): void {
  expect(res.headers['cache-control'], `${what} → ${res.statusCode} ${res.body.slice(0, 200)}`).toBe(
    'no-store',
  );
}

let app: TestApp;
let token: string;
let spareKey: string;
let params: Record<string, string>;
let username: string;

beforeAll(async () => {
  app = await startTestApp();
  const owner = await createUser(app);
  const helper = await createUser(app);
  username = owner.username;
  ({ token } = await createApiKey(app, owner));
  spareKey = (await createApiKey(app, owner)).identifier;
  const server = await createServer(app, owner);
  await addSubuser(app, server.id, helper, ['backup.read']);
  const { archive } = await backupOf({ 'a.txt': 'a' }, await tempDir());
  const backup = await importBackup(app, server.id, archive);
  params = { server: server.identifier, backup: backup.uuid, identifier: spareKey, user: helper.id };
});
afterAll(async () => app?.close());

/** Every route of the OpenAPI document under /api/client, its path parameters filled in. */
function clientRoutes(): { method: string; url: string }[] {
  const doc = app.http.swagger() as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({
      method: method.toUpperCase(),
      url: path.replace(/\{(\w+)\}/g, (_whole, name: string) => params[name] ?? 'unknown'),
    })),
  );
  // Reads first, deletions last, so that most routes see the fixture whole.
  const order = (method: string) => (method === 'GET' ? 0 : method === 'DELETE' ? 2 : 1);
  return routes
    .filter((route) => route.url.startsWith('/api/client'))
    .sort((a, b) => order(a.method) - order(b.method));
}

/** An event stream answers with its own headers once open; it is checked for no-store elsewhere. */
const isEventStream = (route: { method: string; url: string }) =>
  route.method === 'GET' && route.url.endsWith('/events');

describe('Cache-Control on authenticated API answers', () => {
  it('is no-store on every /api/client route, whatever its answer', async () => {
    const statuses = new Set<number>();
    const routes = clientRoutes();
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) {
      if (isEventStream(route)) continue;
      const res = await app.http.inject({
        method: route.method as 'GET',
        url: route.url,
        headers: bearer(token),
        ...(route.method === 'GET' ? {} : { payload: {} }),
      });
      statuses.add(Math.floor(res.statusCode / 100));
      expectNoStore(res, `${route.method} ${route.url}`);
    }
    // Both successes and refusals were seen.
    expect([...statuses].sort()).toEqual([2, 4]);
  });

  it('is no-store on the answers that carry secrets', async () => {
    const secret = await app.http.inject({
      method: 'GET',
      url: '/api/client/account/two-factor',
      headers: bearer(token),
    });
    expect(secret.statusCode, secret.body).toBe(200);
    expectNoStore(secret, 'the TOTP secret');
    const key = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: bearer(token),
      payload: { description: 'cache', allowed_ips: [] },
    });
    expect(key.statusCode, key.body).toBe(200);
    expectNoStore(key, 'a new API key');
    const link = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${params.server}/backups/${params.backup}/download`,
      headers: bearer(token),
    });
    expect(link.statusCode, link.body).toBe(200);
    expectNoStore(link, 'a signed download link');
    const { pathname, search } = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
    const download = await app.http.inject({ method: 'GET', url: pathname + search });
    expect(download.statusCode).toBe(200);
    expectNoStore(download, 'the download');
  });

  it('is no-store on refusals: no credentials, a bad key, an unknown server or route, a bad body', async () => {
    for (const route of clientRoutes()) {
      const res = await app.http.inject({ method: route.method as 'GET', url: route.url });
      expect(res.statusCode).toBe(401);
      expectNoStore(res, `anonymous ${route.method} ${route.url}`);
    }
    const refusals = [
      { method: 'GET', url: '/api/client', headers: bearer(`ptlc_${'x'.repeat(43)}`) },
      { method: 'GET', url: '/api/client/servers/unknown0', headers: bearer(token) },
      { method: 'GET', url: `/api/client/servers/${params.server}/events`, headers: {} },
      { method: 'GET', url: '/api/client/nothing-here', headers: bearer(token) },
      { method: 'PATCH', url: '/api/client/account', headers: bearer(token) },
      { method: 'GET', url: '/download/backup?token=forged', headers: {} },
      { method: 'GET', url: '/api/client/activity?sort=sideways', headers: bearer(token) },
    ] as const;
    for (const request of refusals) {
      const res = await app.http.inject(request);
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expectNoStore(res, `${request.method} ${request.url}`);
    }
  });
});

describe('Cache-Control on logins', () => {
  it('is no-store on a login, a refused one, the checkpoint and the logout', async () => {
    const wrong = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: username, password: 'not it' },
    });
    expect(wrong.statusCode).toBe(400);
    expectNoStore(wrong, 'a refused login');
    const login = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: username, password: PASSWORD },
    });
    expect(login.statusCode, login.body).toBe(200);
    expectNoStore(login, 'a login');
    const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
    const account = await app.http.inject({ method: 'GET', url: '/api/client/account', headers: { cookie } });
    expect(account.statusCode).toBe(200);
    expectNoStore(account, 'the account, by cookie');
    const checkpoint = await app.http.inject({
      method: 'POST',
      url: '/auth/login/checkpoint',
      payload: { confirmation_token: 'x'.repeat(64), authentication_code: '123456' },
    });
    expect(checkpoint.statusCode).toBeGreaterThanOrEqual(400);
    expectNoStore(checkpoint, 'the checkpoint');
    const logout = await app.http.inject({ method: 'POST', url: '/auth/logout', headers: { cookie } });
    expect(logout.statusCode).toBeLessThan(300);
    expectNoStore(logout, 'the logout');
  });
});

import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createApiKey, createUser, startTestApp, type TestApp } from '../support/harness.ts';
import { clearActivity, feed, insertActivity, userSubject, type FeedBody } from '../support/activity.ts';
import type { KeyResource } from '../support/api-key-bodies.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import { rawRequest } from '../support/raw-request.ts';

const NOT_FOUND = 'The requested resource could not be found on the server.';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let app: TestApp;
/** Reads a feed of exactly two entries; never writes. */
let token: string;
/** Creates and deletes keys (which writes activity), so the reader's feed stays as seeded. */
let writer: string;

beforeAll(async () => {
  app = await startTestApp();
  const user = await createUser(app);
  token = (await createApiKey(app, user)).token;
  writer = (await createApiKey(app, await createUser(app))).token;
  await clearActivity(app);
  await insertActivity(app, [
    {
      event: 'auth:login',
      actorId: user.id,
      subjects: [userSubject(user)],
      timestamp: '2026-01-01T00:00:00.000Z',
    },
    {
      event: 'user:api-key.create',
      actorId: user.id,
      subjects: [userSubject(user)],
      timestamp: '2026-01-01T00:00:01.000Z',
    },
  ]);
});

afterAll(async () => {
  await app.close();
});

describe('unknown routes and methods', () => {
  it('answers an unknown route with a 404 envelope, authenticated or not', async () => {
    for (const [url, headers] of [
      ['/nope', {}],
      ['/api/client/does-not-exist', bearer(token)],
      ['/api/client/account/api-keys/x/y/z', bearer(token)],
    ] as const) {
      const res = await app.http.inject({ method: 'GET', url, headers });
      expectError(res, 404, 'NotFoundHttpException', NOT_FOUND);
    }
  });

  it('answers a wrong method on a known path with a 405 and an Allow header', async () => {
    const del = await app.http.inject({
      method: 'DELETE',
      url: '/api/client/activity',
      headers: bearer(token),
    });
    expectError(
      del,
      405,
      'MethodNotAllowedHttpException',
      'The DELETE method is not supported for this route.',
    );
    expect(del.headers.allow).toBe('GET, HEAD');

    const put = await app.http.inject({
      method: 'PUT',
      url: '/api/client/account/api-keys/',
      headers: bearer(token),
    });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');

    const get = await app.http.inject({
      method: 'GET',
      url: '/api/client/account/api-keys/ptlc_abc',
      headers: bearer(token),
    });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('DELETE');
  });
});

describe('request bodies', () => {
  it('refuses malformed JSON with a 400 envelope', async () => {
    for (const url of ['/api/client/account/api-keys', '/auth/login']) {
      const res = await app.http.inject({
        method: 'POST',
        url,
        headers: { ...bearer(writer), 'content-type': 'application/json' },
        payload: '{"description": ',
      });
      expectError(res, 400, 'BadRequestHttpException', 'The request body is not valid JSON.');
    }
  });

  it('refuses a body over the 256 KiB limit with a 413 envelope', async () => {
    expect(app.config.bodyLimitBytes).toBe(256 * 1024);
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      payload: JSON.stringify({ description: 'x'.repeat(256 * 1024) }),
    });
    expectError(res, 413, 'PayloadTooLargeHttpException', 'The request body is too large.');
  });

  it('accepts a body just under the limit (it is then validated, not refused as too large)', async () => {
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      payload: JSON.stringify({ description: 'x'.repeat(200 * 1024) }),
    });
    expectValidation(res, { description: 'max' });
  });

  it('takes Content-Type: application/json with an empty body as {}', async () => {
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<KeyResource>().attributes).toMatchObject({ description: '', allowed_ips: [] });
  });

  it('takes a POST without any body or content type as {}', async () => {
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: bearer(writer),
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('takes an empty body of another content type as {}', async () => {
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: { ...bearer(writer), 'content-type': 'text/plain' },
      payload: '',
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses a JSON body that is not an object with 422 naming the body', async () => {
    for (const payload of ['[]', '"text"', '5', 'true']) {
      const res = await app.http.inject({
        method: 'POST',
        url: '/api/client/account/api-keys',
        headers: { ...bearer(writer), 'content-type': 'application/json' },
        payload,
      });
      expectValidation(res, { body: 'object' });
      expect(res.body, payload).toContain('The request body must be a JSON object.');
    }
  });

  it('parses vendor JSON content types as JSON', async () => {
    const res = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: { ...bearer(writer), 'content-type': 'application/vnd.pterodactyl.v1+json' },
      payload: JSON.stringify({ description: 'vendor' }),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<KeyResource>().attributes.description).toBe('vendor');
  });

  it('accepts a GET that carries a JSON body of null, and a DELETE with an empty JSON body', async () => {
    const get = await app.http.inject({
      method: 'GET',
      url: '/api/client/activity',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: 'null',
    });
    expect(get.statusCode, get.body).toBe(200);
    expect(get.json<FeedBody>().meta.pagination.total).toBe(2);

    const created = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: bearer(writer),
    });
    const identifier = created.json<KeyResource>().attributes.identifier;
    const del = await app.http.inject({
      method: 'DELETE',
      url: `/api/client/account/api-keys/${identifier}`,
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      payload: '',
    });
    expect(del.statusCode, del.body).toBe(204);
    expect(del.body).toBe('');
  });
});

describe('liberal parsing of requests', () => {
  it('serves JSON whatever the Accept header says', async () => {
    for (const accept of [
      'Application/vnd.pterodactyl.v1+json',
      'application/json',
      'text/html',
      '*/*',
      'application/xml',
    ]) {
      const res = await app.http.inject({
        method: 'GET',
        url: '/api/client/activity',
        headers: { ...bearer(token), accept },
      });
      expect(res.statusCode, `${accept}: ${res.body}`).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
    const anonymous = await app.http.inject({
      method: 'GET',
      url: '/api/client/activity',
      headers: { accept: 'text/html' },
    });
    expectError(
      anonymous,
      401,
      'NotAuthenticatedException',
      'You are not authenticated to access this route.',
    );
  });

  it('accepts a trailing slash before the query', async () => {
    const res = await app.http.inject({
      method: 'GET',
      url: '/api/client/activity/?page=1&per_page=1',
      headers: bearer(token),
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<FeedBody>();
    expect(body.meta.pagination).toMatchObject({ total: 2, per_page: 1, current_page: 1, total_pages: 2 });
    const keys = await app.http.inject({
      method: 'GET',
      url: '/api/client/account/api-keys/',
      headers: bearer(token),
    });
    expect(keys.statusCode).toBe(200);
  });

  it('treats percent-encoded brackets in filter[…] like literal ones', async () => {
    const literal = await feed(app, token, 'filter[event]=auth');
    expect(literal.data.map((d) => d.attributes.event)).toEqual(['auth:login']);
    for (const query of ['filter%5Bevent%5D=auth', 'filter%5bevent%5d=auth', 'filter%5Bevent]=AUTH']) {
      const encoded = await feed(app, token, query);
      expect(
        encoded.data.map((d) => d.attributes.event),
        query,
      ).toEqual(['auth:login']);
    }
    const unknown = await app.http.inject({
      method: 'GET',
      url: '/api/client/activity?filter%5Bnope%5D=x',
      headers: bearer(token),
    });
    expectValidation(unknown, { 'filter[nope]': 'allowed' });
  });
});

describe('request ids', () => {
  it('sends a fresh x-request-id (a UUID) on every response, errors included', async () => {
    const ok = await app.http.inject({ method: 'GET', url: '/api/client/activity', headers: bearer(token) });
    const again = await app.http.inject({
      method: 'GET',
      url: '/api/client/activity',
      headers: bearer(token),
    });
    const missing = await app.http.inject({ method: 'GET', url: '/nope' });
    const anonymous = await app.http.inject({ method: 'GET', url: '/api/client/activity' });
    for (const res of [ok, again, missing, anonymous]) expect(res.headers['x-request-id']).toMatch(UUID);
    expect(new Set([ok, again, missing, anonymous].map((r) => r.headers['x-request-id'])).size).toBe(4);
  });
});

describe('unexpected failures', () => {
  it('answers 500 InternalServerError without leaking SQL, table names or stacks', async () => {
    const broken = await startTestApp();
    try {
      const user = await createUser(broken);
      const key = await createApiKey(broken, user);
      const login = await broken.http.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { user: user.username, password: user.password },
      });
      const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
      await broken.db.kysely.schema.dropTable('api_keys').execute();

      for (const headers of [{ cookie }, bearer(key.token)]) {
        const res = await broken.http.inject({ method: 'GET', url: '/api/client/account/api-keys', headers });
        expect(res.statusCode).toBe(500);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        const body = res.json<{ errors: Array<Record<string, unknown>> }>();
        expect(body.errors).toHaveLength(1);
        expect(Object.keys(body.errors[0] ?? {}).sort()).toEqual(['code', 'detail', 'status']);
        expect(body.errors[0]).toMatchObject({ code: 'InternalServerError', status: '500' });
        for (const leak of [
          'api_keys',
          'SQLITE',
          'no such table',
          'select',
          'Error:',
          '    at ',
          '.ts:',
          'node_modules',
        ]) {
          expect(res.body.toLowerCase()).not.toContain(leak.toLowerCase());
        }
      }
    } finally {
      await broken.close();
    }
  });
});

describe('over a real socket', () => {
  let base: string;
  let port: number;

  beforeAll(async () => {
    await app.http.listen({ port: 0, host: '127.0.0.1' });
    port = (app.http.server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });

  it('serves the feed with a vendor Accept header and a trailing slash', async () => {
    const res = await fetch(`${base}/api/client/activity/?page=1`, {
      headers: { ...bearer(token), accept: 'Application/vnd.pterodactyl.v1+json' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(UUID);
    const body = (await res.json()) as FeedBody;
    expect(body.object).toBe('list');
    expect(body.meta.pagination.total).toBe(2);
  });

  it('answers unknown routes, 405s and missing credentials with the JSON envelope', async () => {
    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      errors: [{ code: 'NotFoundHttpException', status: '404', detail: NOT_FOUND }],
    });

    const wrongMethod = await fetch(`${base}/api/client/activity`, {
      method: 'PATCH',
      headers: bearer(token),
    });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');

    const anonymous = await fetch(`${base}/api/client/activity`);
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe(
      'NotAuthenticatedException',
    );
  });

  it('refuses an oversized body with 413 JSON', async () => {
    const res = await fetch(`${base}/api/client/account/api-keys`, {
      method: 'POST',
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      body: JSON.stringify({ description: 'y'.repeat(300 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe(
      'PayloadTooLargeHttpException',
    );
  });

  it('refuses an oversized chunked body (no Content-Length) with 413 JSON', async () => {
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('{"description":"'));
        for (let i = 0; i < 40; i++) controller.enqueue(encoder.encode('z'.repeat(10 * 1024)));
        controller.enqueue(encoder.encode('"}'));
        controller.close();
      },
    });
    const res = await fetch(`${base}/api/client/account/api-keys`, {
      method: 'POST',
      headers: { ...bearer(writer), 'content-type': 'application/json' },
      body,
      duplex: 'half',
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe(
      'PayloadTooLargeHttpException',
    );
  });

  it('accepts a GET that carries a JSON null body', async () => {
    const headers = { ...bearer(token), 'content-type': 'application/json' };
    const { status, body } = await rawRequest(port, 'GET', '/api/client/activity', headers, 'null');
    expect(status, body).toBe(200);
    expect((JSON.parse(body) as FeedBody).meta.pagination.total).toBe(2);
  });
});

describe('form-labelled bodies', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app.close());

  it('takes an empty form body as no fields, and refuses a real form with 415', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const form = { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' };
    const empty = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: form,
      payload: '',
    });
    expect(empty.statusCode).toBe(200);
    const filled = await app.http.inject({
      method: 'POST',
      url: '/api/client/account/api-keys',
      headers: form,
      payload: 'description=x',
    });
    expect(filled.statusCode).toBe(415);
    expect(filled.json()).toEqual({
      errors: [
        { code: 'UnsupportedMediaTypeHttpException', status: '415', detail: expect.any(String) as string },
      ],
    });
  });
});

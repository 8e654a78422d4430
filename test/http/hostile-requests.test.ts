import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { entriesFor, insertActivity } from '../support/activity.ts';
import { expectValidation } from '../support/expect-error.ts';

/**
 * Requests that well-behaved clients never send: no Host, a Host that is no host, request
 * targets and headers Node's HTTP parser refuses, numbers that are not plain decimals. Most go
 * over a raw socket, byte for byte, since neither `fetch` nor `app.inject` can send them.
 */

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `request` to a fresh connection and reads the response until the server closes it. The
 * connection stays open after the request (a request that never completes is a stalled client).
 */
function exchange(port: number, request: string | Buffer): Promise<RawResponse & { ms: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    // Not half-closed: Node's HTTP server ends a half-closed connection without answering when
    // the handler is still waiting on a server database's network round trip.
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    socket.setTimeout(15_000, () => socket.destroy(new Error('the server did not close the connection')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve({ ...parseResponse(Buffer.concat(chunks).toString('utf8')), ms: Date.now() - started });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

function parseResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response: ${JSON.stringify(text)}`);
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(end + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    let decoded = '';
    for (let rest = body; ;) {
      const lineEnd = rest.indexOf('\r\n');
      const size = parseInt(rest.slice(0, lineEnd), 16);
      if (!(size > 0)) break;
      decoded += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      rest = rest.slice(lineEnd + 2 + size + 2);
    }
    body = decoded;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** A GET written out by hand; `host` null sends no Host header at all. */
function get(
  target: string,
  options: { host?: string | null; token?: string; version?: string; extra?: string } = {},
): string {
  const lines = [`GET ${target} HTTP/${options.version ?? '1.1'}`];
  if (options.host !== null) lines.push(`Host: ${options.host ?? 'localhost'}`);
  if (options.token !== undefined) lines.push(`Authorization: Bearer ${options.token}`);
  lines.push('Connection: close');
  if (options.extra !== undefined) lines.push(options.extra);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The whole response is the envelope with one error of this status and code, and closes. */
function expectEnvelope(res: RawResponse, status: number, code: string): void {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers.connection?.toLowerCase()).toBe('close');
  expect(JSON.parse(res.body)).toEqual({
    errors: [{ code, status: String(status), detail: expect.any(String) as string }],
  });
}

interface Listing {
  data: unknown[];
  meta: { pagination: { current_page: number; links: { previous?: string; next?: string } } };
}

function linksOf(res: RawResponse): Listing['meta']['pagination']['links'] {
  expect(res.status, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return (JSON.parse(res.body) as Listing).meta.pagination.links;
}

async function listen(app: TestApp): Promise<number> {
  await app.http.listen({ port: 0, host: '127.0.0.1' });
  return (app.http.server.address() as AddressInfo).port;
}

let app: TestApp;
let port: number;
let token: string;
let backupsPath: string;

beforeAll(async () => {
  app = await startTestApp();
  const user = await createUser(app);
  token = (await createApiKey(app, user)).token;
  await insertActivity(app, entriesFor(user, 3));
  const server = await createServer(app, user);
  await createServer(app, user);
  await createServer(app, user);
  backupsPath = `/api/client/servers/${server.identifier}/backups`;
  for (const name of ['one', 'two', 'three']) {
    const res = await app.http.inject({
      method: 'POST',
      url: backupsPath,
      headers: bearer(token),
      payload: { name },
    });
    expect(res.statusCode, res.body).toBe(200);
  }
  port = await listen(app);
});

afterAll(async () => {
  await app.close();
});

describe('pagination links whatever the Host header says', () => {
  const page2 = '/api/client/activity?per_page=1&page=2';

  it.each([
    ['HTTP/1.0 without Host', { host: null, version: '1.0' }],
    ['an empty Host', { host: '' }],
    ['an unclosed IPv6 literal', { host: '[::1' }],
    ['a port out of range', { host: 'x:99999' }],
    ['a percent sign', { host: 'a%b' }],
    ['a path', { host: 'evil.example/steal' }],
    ['credentials', { host: 'user@evil.example' }],
    ['an empty port', { host: 'panel.example:' }],
    ['a zero port', { host: 'panel.example:0' }],
    ['an IPv4 address out of range', { host: '999.1.1.1' }],
    ['a name ending in a number', { host: 'panel.123' }],
    ['a space', { host: 'a b' }],
    ['an IPv6 literal that is not one', { host: '[::g]' }],
  ])('answers 200 with relative links for %s', async (_name, options) => {
    const res = await exchange(port, get(page2, { token, ...options }));
    expect(linksOf(res)).toEqual({
      previous: '/api/client/activity?per_page=1&page=1',
      next: '/api/client/activity?per_page=1&page=3',
    });
  });

  it('builds absolute links on a valid Host: a name, IPv4 or IPv6, with or without a port', async () => {
    for (const [host, origin] of [
      ['Panel.Example.com:8443', 'http://panel.example.com:8443'],
      ['aerie_api', 'http://aerie_api'],
      ['10.0.0.7:80', 'http://10.0.0.7'],
      ['[::1]:8080', 'http://[::1]:8080'],
    ] as const) {
      const res = await exchange(port, get(page2, { token, host }));
      expect(linksOf(res).next, host).toBe(`${origin}/api/client/activity?per_page=1&page=3`);
    }
  });

  it('never 5xx on the server list or a backup list either', async () => {
    for (const path of ['/api/client?per_page=1&page=2', `${backupsPath}?per_page=1&page=2`]) {
      for (const host of [null, '', '[::1', 'x:99999', 'a%b']) {
        const res = await exchange(port, get(path, { token, host, version: host === null ? '1.0' : '1.1' }));
        const links = linksOf(res);
        expect(links.next, `${path} with Host ${String(host)}`).toBe(path.replace('page=2', 'page=3'));
        expect(links.previous).toBe(path.replace('page=2', 'page=1'));
      }
    }
  });

  it('links to the path the route answered, never to another host', async () => {
    const doubled = await exchange(
      port,
      get('//api//client///activity?per_page=1&page=2', { token, host: '' }),
    );
    expect(linksOf(doubled).next).toBe('/api/client/activity?per_page=1&page=3');

    const absoluteForm = get('http://evil.example/api/client/activity?per_page=1&page=2', {
      token,
      host: 'panel.example',
    });
    expect(linksOf(await exchange(port, absoluteForm)).next).toBe(
      'http://panel.example/api/client/activity?per_page=1&page=3',
    );
  });

  it('keeps the rest of the query as it was sent, replacing only page', async () => {
    const res = await exchange(
      port,
      get('/api/client/activity?filter%5Bevent%5D=auth&page=2&per_page=1&sort=-timestamp', { token }),
    );
    expect(linksOf(res)).toEqual({
      previous:
        'http://localhost/api/client/activity?filter%5Bevent%5D=auth&page=1&per_page=1&sort=-timestamp',
      next: 'http://localhost/api/client/activity?filter%5Bevent%5D=auth&page=3&per_page=1&sort=-timestamp',
    });
  });

  it('builds every link on AERIE_PUBLIC_URL when it is set, whatever Host or X-Forwarded-Host say', async () => {
    const behind = await startTestApp({
      env: { AERIE_PUBLIC_URL: 'https://panel.example.com/aerie/', TRUST_PROXY: 'true' },
    });
    try {
      const user = await createUser(behind);
      const key = await createApiKey(behind, user);
      await insertActivity(behind, entriesFor(user, 3));
      const behindPort = await listen(behind);
      for (const options of [
        { host: 'evil.example' },
        { host: null, version: '1.0' },
        { host: '[::1' },
        { host: 'localhost', extra: 'X-Forwarded-Host: evil.example' },
      ]) {
        const res = await exchange(behindPort, get(page2, { token: key.token, ...options }));
        expect(linksOf(res), JSON.stringify(options)).toEqual({
          previous: 'https://panel.example.com/aerie/api/client/activity?per_page=1&page=1',
          next: 'https://panel.example.com/aerie/api/client/activity?per_page=1&page=3',
        });
      }
    } finally {
      await behind.close();
    }
  });
});

describe('errors raised before routing use the envelope', () => {
  it('431 for a request target over 16 KiB', async () => {
    const res = await exchange(
      port,
      get(`/api/client/activity?filter[event]=${'a'.repeat(17 * 1024)}`, { token }),
    );
    expectEnvelope(res, 431, 'RequestHeaderFieldsTooLargeHttpException');
  });

  it('431 for headers over 16 KiB', async () => {
    const res = await exchange(
      port,
      get('/api/client/activity', { token, extra: `X-Padding: ${'b'.repeat(17 * 1024)}` }),
    );
    expectEnvelope(res, 431, 'RequestHeaderFieldsTooLargeHttpException');
  });

  it.each([
    [
      'a raw non-ASCII byte in the target',
      Buffer.from(get('/api/client/activity?filter[event]=é', { token }), 'utf8'),
    ],
    ['a raw NUL byte in the target', Buffer.from(get('/api/client/activ\0ity', { token }), 'latin1')],
    ['Content-Length: abc', postWith('Content-Length: abc')],
    ['two Content-Length headers that disagree', postWith('Content-Length: 2\r\nContent-Length: 3')],
    ['Content-Length with Transfer-Encoding', postWith('Content-Length: 2\r\nTransfer-Encoding: chunked')],
    ['an unknown method', 'BREW /api/client/activity HTTP/1.1\r\nHost: localhost\r\n\r\n'],
    ['an HTTP/1.1 request without Host', get('/api/client/activity', { token, host: null })],
  ])('400 for %s', async (_name, request) => {
    expectEnvelope(await exchange(port, request), 400, 'BadRequestHttpException');
  });

  function postWith(lengthHeaders: string): string {
    return (
      `POST /api/client/account/api-keys HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\n${lengthHeaders}\r\nConnection: close\r\n\r\n{}`
    );
  }

  it('417 for an Expect header other than 100-continue', async () => {
    const res = await exchange(port, get('/api/client/activity', { token, extra: 'Expect: teapot' }));
    expectEnvelope(res, 417, 'ExpectationFailedHttpException');
  });

  it('CONNECT gets an answer like any method no route takes: 405 on a known path, else 404', async () => {
    const known = await exchange(port, `CONNECT /api/client HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    expectEnvelope(known, 405, 'MethodNotAllowedHttpException');
    expect(known.headers.allow).toBe('GET, HEAD');
    const tunnel = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expectEnvelope(tunnel, 404, 'NotFoundHttpException');
  });

  it('answers odd but parseable targets without a 5xx, always in JSON', async () => {
    for (const target of [
      '/api/client/activity?filter[event]=%ff',
      '/api/client/activity?filter[ip]=%e0%80',
      '/api/client/activ%00ity',
      '/api/client/servers/%00/backups',
      `/api/client/activity?${'x'.repeat(15 * 1024)}`,
      `/api/client/activity?filter[event]=${'%41'.repeat(5000)}`,
      '/api/client/activity?per_page=1&page=2#fragment',
      '/api/client/activity?page=99999999999999999999999',
    ]) {
      const res = await exchange(port, get(target, { token }));
      expect(res.status, `${target.slice(0, 80)}: ${res.body}`).toBeLessThan(500);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(() => JSON.parse(res.body) as unknown).not.toThrow();
    }
  });
});

describe('integer query parameters take plain decimal digits only', () => {
  const listings = () => ['/api/client/activity', '/api/client', backupsPath];

  it.each([
    ['per_page=0x10', 'per_page'],
    ['per_page=%201', 'per_page'],
    ['per_page=1%20', 'per_page'],
    ['per_page=+5', 'per_page'],
    ['per_page=1.0', 'per_page'],
    ['per_page=5e0', 'per_page'],
    ['per_page=0b11', 'per_page'],
    ['per_page=%0A3', 'per_page'],
    ['page=1e2', 'page'],
    ['page=0o7', 'page'],
    ['page=%091', 'page'],
    ['page=Infinity', 'page'],
  ])('%s → 422 on %s (integer)', async (query, field) => {
    for (const url of listings()) {
      const res = await app.http.inject({ method: 'GET', url: `${url}?${query}`, headers: bearer(token) });
      expectValidation(res, { [field]: 'integer' });
      expect(res.body).toContain(`The ${field} field must be an integer.`);
    }
  });

  it('still takes plain decimals, leading zeros included, and reports both fields at once', async () => {
    for (const url of listings()) {
      const ok = await app.http.inject({
        method: 'GET',
        url: `${url}?per_page=02&page=1`,
        headers: bearer(token),
      });
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json<Listing>().data).toHaveLength(2);
      const both = await app.http.inject({
        method: 'GET',
        url: `${url}?per_page=0x2&page=1e0`,
        headers: bearer(token),
      });
      expectValidation(both, { per_page: 'integer', page: 'integer' });
    }
  });

  it('still documents page and per_page as integers', async () => {
    const res = await app.http.inject({ method: 'GET', url: '/api/openapi.json' });
    const doc = res.json<{
      paths: Record<string, { get: { parameters: Array<{ name: string; schema: { type: string } }> } }>;
    }>();
    for (const path of ['/api/client/activity', '/api/client', '/api/client/servers/{server}/backups']) {
      const parameters = doc.paths[path]?.get.parameters ?? [];
      for (const name of ['page', 'per_page']) {
        expect(parameters.find((p) => p.name === name)?.schema.type, `${path} ${name}`).toBe('integer');
      }
    }
  });
});

describe('connections that cannot be served', () => {
  it.each([
    [
      'a body that never finishes arriving',
      'POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user":',
    ],
    [
      // Node stops reading such a body without reporting an error: only the time limit ends it.
      'an Upgrade request whose chunked body is malformed',
      'POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: Upgrade\r\n' +
        'Upgrade: websocket\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
    ],
  ])('%s gets a 408 in the envelope after AERIE_REQUEST_TIMEOUT_SECONDS', async (_name, request) => {
    const impatient = await startTestApp({ env: { AERIE_REQUEST_TIMEOUT_SECONDS: '1' } });
    try {
      const res = await exchange(await listen(impatient), request);
      expectEnvelope(res, 408, 'RequestTimeoutHttpException');
      expect(res.ms).toBeLessThan(10_000);
    } finally {
      await impatient.close();
    }
  });

  it('a request that arrives while the server is closing gets a 503 in the envelope', async () => {
    const closingApp = await startTestApp();
    const closingPort = await listen(closingApp);
    const received: Buffer[] = [];
    const socket = net.connect(closingPort, '127.0.0.1');
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const ended = new Promise((resolve) => socket.once('close', resolve));
    // A request still arriving keeps its connection open while the server closes…
    const body = JSON.stringify({ user: 'nobody', password: 'wrong password' });
    socket.write(
      `POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = closingApp.http.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    // …and a second request pipelined behind it arrives once closing has begun.
    socket.write(`${body.slice(5)}GET /api/client HTTP/1.1\r\nHost: x\r\n\r\n`);
    await ended;
    await closed;
    const text = Buffer.concat(received).toString('utf8');
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    expectEnvelope(parseResponse(second), 503, 'ServiceUnavailableHttpException');
    await closingApp.close();
  });
});

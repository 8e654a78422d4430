/**
 * Whoever reads Aerie's logs must not find credentials there: the token of a signed download
 * link (it downloads the backup until it expires), an API key, a session cookie. Each test makes
 * requests that carry them, then reads the log.
 */
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions, redactSecrets } from '../../src/logger.ts';
import { sessionCookieOf } from '../support/session-cookie.ts';
import { spawnAerie } from '../support/aerie-process.ts';
import { backupOf, tempDir } from '../support/archives.ts';
import { freePort, until, untilListening } from '../support/wait.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { PASSWORD } from '../support/two-factor.ts';

/** A user with a key, a session and a backup, on `app`. */
async function secretsOf(app: TestApp) {
  const user = await createUser(app);
  const { token } = await createApiKey(app, user);
  const server = await createServer(app, user);
  const { archive } = await backupOf({ 'a.txt': 'a' }, await tempDir());
  const backup = await importBackup(app, server.id, archive);
  const login = await app.http.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { user: user.username, password: PASSWORD },
  });
  expect(login.statusCode, login.body).toBe(200);
  const session = sessionCookieOf(login).split('=')[1] ?? '';
  return {
    user,
    token,
    session,
    downloadPath: `/api/client/servers/${server.identifier}/backups/${backup.uuid}/download`,
  };
}

/** Fails naming the secret when the log holds any of them, or any long piece of one. */
function expectAbsent(log: string, secrets: Record<string, string>): void {
  for (const [name, secret] of Object.entries(secrets)) {
    expect(secret.length, name).toBeGreaterThan(16);
    // A secret cut short is still a secret (the MAC half of a download token, say).
    for (const piece of [secret, secret.slice(0, 16), secret.slice(-16)])
      expect(log.includes(piece), `${name} (${piece}) is in the log`).toBe(false);
  }
}

describe('the request log of the HTTP app', () => {
  const lines: string[] = [];
  let app: TestApp;
  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n')));
    app = await startTestApp({ logger: pino(loggerOptions('trace'), stream) });
  });
  afterAll(async () => app?.close());

  it('holds no download token, API key, session cookie or password', async () => {
    const { user, token, session, downloadPath } = await secretsOf(app);
    const cookie = `aerie_session=${session}`;
    const link = await app.http.inject({
      method: 'GET',
      url: downloadPath,
      headers: { ...bearer(token), cookie },
    });
    expect(link.statusCode, link.body).toBe(200);
    const url = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
    const downloadToken = url.searchParams.get('token') ?? '';
    // The token as sent, and spelled as a query parser still reads it.
    for (const query of [url.search, `?x=1&%74oken=${downloadToken}`, `?TOKEN=${downloadToken}&token=x`]) {
      const download = await app.http.inject({ method: 'GET', url: `${url.pathname}${query}` });
      expect(download.statusCode).toBeLessThan(500);
    }
    const byCookie = await app.http.inject({
      method: 'GET',
      url: '/api/client/account',
      headers: { cookie },
    });
    expect(byCookie.statusCode).toBe(200);
    const login = await app.http.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: user.username, password: PASSWORD },
    });
    expect(login.statusCode).toBe(200);
    const loginCookie = sessionCookieOf(login).split('=')[1] ?? '';
    // Anything that logs headers has them censored.
    app.http.log.info(
      {
        req: {
          headers: { authorization: `Bearer ${token}`, cookie, 'set-cookie': `aerie_session=${loginCookie}` },
        },
      },
      'headers',
    );
    app.http.log.info({ headers: { authorization: `Bearer ${token}`, cookie } }, 'headers');

    const log = lines.join('\n');
    expect(log).toContain(`"url":"${url.pathname}?token=[REDACTED]"`);
    expect(log).toContain('"url":"/download/backup?x=1&%74oken=[REDACTED]"');
    expect(log).toContain('"authorization":"[REDACTED]"');
    expectAbsent(log, {
      'the download token': downloadToken,
      'the API key': token,
      'the session cookie': session,
      'the login cookie': loginCookie,
    });
    expect(log).not.toContain(PASSWORD);
    // Every line is still JSON.
    for (const line of lines.filter((l) => l !== ''))
      expect(() => JSON.parse(line) as unknown, line).not.toThrow();
  });
});

describe('the request log line', () => {
  const lines: string[] = [];
  let app: TestApp;
  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n')));
    app = await startTestApp({ logger: pino(loggerOptions('info'), stream) });
  });
  afterAll(async () => app?.close());

  it('is one info line per request: method, URL (query redacted), status and time', async () => {
    const user = await createUser(app);
    const { token } = await createApiKey(app, user);
    const secret = 'a-query-secret-of-some-length';
    const res = await app.http.inject({
      method: 'GET',
      url: `/api/client/account?page=2&token=${secret}`,
      headers: bearer(token),
    });
    expect(res.statusCode, res.body).toBe(200);
    const requestId = String(res.headers['x-request-id']);
    // The stream gets the line when the response is finished, which inject may return before.
    const ofRequest = () =>
      lines
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.reqId === requestId);
    await until(() => ofRequest().length > 0, { timeoutMs: 5000, what: 'the request line' });
    // Time for a second line, were there one.
    await new Promise((resolve) => setTimeout(resolve, 50));

    const entries = ofRequest();
    expect(entries).toHaveLength(1);
    const [entry] = entries;
    expect(entry).toMatchObject({
      level: 30,
      method: 'GET',
      url: '/api/client/account?page=2&token=[REDACTED]',
      statusCode: 200,
    });
    expect(entry?.responseTime).toEqual(expect.any(Number));
    expect(entry?.msg).toMatch(/^GET \/api\/client\/account\?page=2&token=\[REDACTED\] 200 \d+\.\d ms$/);
    expect(lines.join('\n')).not.toContain(secret);
  });
});

describe('the log of `aerie serve`', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app?.close());

  it('holds no download token, API key or session cookie', async () => {
    const { token, session, downloadPath } = await secretsOf(app);
    const port = await freePort();
    const aerie = spawnAerie(app, ['serve', '--host', '127.0.0.1', '--port', String(port)], {
      LOG_LEVEL: 'info',
    });
    try {
      await untilListening(port);
      const headers = { ...bearer(token), cookie: `aerie_session=${session}` };
      const link = await fetch(`http://127.0.0.1:${port}${downloadPath}`, { headers });
      expect(link.status).toBe(200);
      const url = new URL(((await link.json()) as { attributes: { url: string } }).attributes.url);
      const download = await fetch(url);
      expect(download.status).toBe(200);
      await download.arrayBuffer();
      // A request's line is written once its response has finished, which may be a moment after
      // the client has the last byte.
      await until(() => aerie.output().includes(`"url":"${url.pathname}?`), {
        timeoutMs: 10_000,
        what: "the download's log line",
        context: () => aerie.output(),
      });
      const log = aerie.output();
      expect(log).toContain('token=[REDACTED]');
      expectAbsent(log, {
        'the download token': url.searchParams.get('token') ?? '',
        'the API key': token,
        'the session cookie': session,
      });
    } finally {
      aerie.child.kill('SIGTERM');
      await aerie.exited;
    }
    // A process of its own, started from the sources: 4 s alone, past 30 s once under a full suite.
  }, 120_000);
});

describe('redactSecrets', () => {
  it.each([
    ['/download/backup?token=abc.def', '/download/backup?token=[REDACTED]'],
    ['/x?a=1&token=abc&b=2', '/x?a=1&token=[REDACTED]&b=2'],
    ['/x?a=b?token=abc', '/x?a=b?token=[REDACTED]'],
    ['/x?%74oken=abc&Token=d&to+ken=e', '/x?%74oken=[REDACTED]&Token=[REDACTED]&to+ken=e'],
    [
      'https://s3.example/b?X-Amz-Signature=abc&X-Amz-Credential=k%2F1',
      'https://s3.example/b?X-Amz-Signature=[REDACTED]&X-Amz-Credential=[REDACTED]',
    ],
    ['{"url":"/d?token=a\\"b","n":1}', '{"url":"/d?token=[REDACTED]\\"b","n":1}'],
    ['/x?tokens=1&page=2', '/x?tokens=1&page=2'],
    ['no query here = fine', 'no query here = fine'],
  ])('%s', (text, redacted) => {
    expect(redactSecrets(text)).toBe(redacted);
  });
});

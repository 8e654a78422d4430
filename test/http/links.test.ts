/**
 * Every absolute link Aerie hands out (a backup's signed download link, pagination) is rooted on
 * AERIE_PUBLIC_URL, path prefix and all, when it is set; else on a strictly valid Host; else it
 * is relative. A request can never point a link, and the token it carries, at another host.
 */
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupOf, tempDir } from '../support/archives.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

const HOSTILE_HOSTS = [
  'a@evil.example',
  'evil.example/x?',
  '',
  'a b',
  'evil.example:99999',
  'evil.example#x',
];
const SIGNED_PATH = /^\/download\/backup\?token=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const PUBLIC_URL = 'http://aerie.example:19102/prefix';

interface Fixture {
  app: TestApp;
  port: number;
  token: string;
  server: string;
  backup: string;
  archive: string;
}

/** An app listening on a real socket: Hosts that `inject` would replace (an empty one) arrive as sent. */
async function fixture(env: Record<string, string> = {}): Promise<Fixture> {
  // Archive backups: a download is then the imported file itself, byte for byte.
  const app = await startTestApp({ env: { AERIE_BACKUP_FORMAT: 'archive', ...env } });
  await app.http.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.http.server.address() as AddressInfo).port;
  const user = await createUser(app);
  const { token } = await createApiKey(app, user);
  const { id, identifier } = await createServer(app, user);
  const { archive } = await backupOf({ 'server.properties': 'motd=links\n' }, await tempDir());
  const backup = (await importBackup(app, id, archive, 'first')).uuid;
  await importBackup(app, id, archive, 'second');
  return { app, port, token, server: identifier, backup, archive };
}

/**
 * GET `path` over a socket of our own, headers exactly as given (Node's client would put its own
 * Host in place of an empty one), with the fixture's key; the answer as JSON.
 */
async function getJson<T>(f: Fixture, path: string, headers: Record<string, string>): Promise<T> {
  const lines = Object.entries({ ...bearer(f.token), connection: 'close', ...headers }).map(
    ([name, value]) => `${name}: ${value}`,
  );
  const socket = net.connect({ host: '127.0.0.1', port: f.port });
  // Written, not ended: Node's server aborts a request whose client half-closes before the answer
  // is sent, which an answer waiting on a database server (not SQLite's) always is. The server
  // closes the connection after answering (`connection: close`).
  socket.write(`GET ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const at = text.indexOf('\r\n\r\n');
  expect(text.slice(0, 12), text).toBe('HTTP/1.1 200');
  return JSON.parse(text.slice(at + 4)) as T;
}

/** The `url` of the backup's signed download link, asked for with these extra headers. */
async function downloadUrl(f: Fixture, headers: Record<string, string>): Promise<string> {
  const path = `/api/client/servers/${f.server}/backups/${f.backup}/download`;
  return (await getJson<{ attributes: { url: string } }>(f, path, headers)).attributes.url;
}

/** The `next` link of the backup listing, one backup a page. */
async function nextPage(f: Fixture, headers: Record<string, string>): Promise<string> {
  const path = `/api/client/servers/${f.server}/backups?per_page=1`;
  return (await getJson<{ meta: { pagination: { links: { next: string } } } }>(f, path, headers)).meta
    .pagination.links.next;
}

/** Downloads through a path on the app itself; the archive must be the one imported. */
async function expectDownloads(f: Fixture, pathAndQuery: string): Promise<void> {
  const res = await f.app.http.inject({ method: 'GET', url: pathAndQuery });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.rawPayload.equals(fs.readFileSync(f.archive))).toBe(true);
}

describe('without AERIE_PUBLIC_URL', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });
  afterAll(async () => f?.app.close());

  it.each(HOSTILE_HOSTS)('gives a relative download link for Host %j, which downloads', async (host) => {
    const url = await downloadUrl(f, { host });
    expect(url).toMatch(SIGNED_PATH);
    await expectDownloads(f, url);
  });

  it.each(HOSTILE_HOSTS)('gives relative page links for Host %j', async (host) => {
    expect(await nextPage(f, { host })).toBe(`/api/client/servers/${f.server}/backups?per_page=1&page=2`);
  });

  it.each([
    ['panel.example', 'http://panel.example'],
    ['Panel.Example:8443', 'http://panel.example:8443'],
    ['10.0.0.7:8080', 'http://10.0.0.7:8080'],
    ['[::1]:8080', 'http://[::1]:8080'],
  ])('roots links on a valid Host %j', async (host, origin) => {
    const url = await downloadUrl(f, { host });
    expect(url.startsWith(`${origin}/download/backup?token=`), url).toBe(true);
    const { pathname, search } = new URL(url);
    await expectDownloads(f, pathname + search);
    expect(await nextPage(f, { host })).toBe(
      `${origin}/api/client/servers/${f.server}/backups?per_page=1&page=2`,
    );
  });

  it('takes no host from a proxy it does not trust', async () => {
    const url = await downloadUrl(f, {
      host: 'panel.example',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
    });
    expect(url.startsWith('http://panel.example/download/backup?token='), url).toBe(true);
  });
});

describe('with AERIE_PUBLIC_URL and a path prefix', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture({ AERIE_PUBLIC_URL: `${PUBLIC_URL}/` });
  });
  afterAll(async () => f?.app.close());

  it.each(['127.0.0.1:19102', 'panel.example', ...HOSTILE_HOSTS])(
    'roots the download link on it, prefix kept, whatever the Host (%j)',
    async (host) => {
      const url = await downloadUrl(f, { host });
      expect(url.startsWith(`${PUBLIC_URL}/download/backup?token=`), url).toBe(true);
      // The proxy in front strips the prefix; the link then reaches the download route.
      const { pathname, search } = new URL(url);
      expect(pathname.startsWith('/prefix/')).toBe(true);
      await expectDownloads(f, pathname.slice('/prefix'.length) + search);
    },
  );

  it('roots page links on it, prefix kept', async () => {
    for (const host of ['127.0.0.1:19102', ...HOSTILE_HOSTS]) {
      expect(await nextPage(f, { host }), host).toBe(
        `${PUBLIC_URL}/api/client/servers/${f.server}/backups?per_page=1&page=2`,
      );
    }
  });
});

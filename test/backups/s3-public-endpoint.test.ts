/**
 * AERIE_S3_PUBLIC_ENDPOINT: Aerie talks to the store at AERIE_S3_ENDPOINT (a name only its own
 * network knows, in a real deployment), and signs download links for the public endpoint, where
 * browsers reach it. Only an archive backup (AERIE_BACKUP_FORMAT=archive) is downloaded straight
 * from the store, its object presigned: a snapshot is made into a .tar.gz by Aerie as it is sent. Here s3rver answers under two names, 127.0.0.1 (public) and a relay (the
 * internal endpoint, which notes every request), so the test can tell which one each side used.
 */
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTree } from '../support/archives.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
} from '../support/harness.ts';
import { startRelay, startS3, type TestS3 } from '../support/s3.ts';

let s3: TestS3;
beforeAll(async () => {
  s3 = await startS3();
});
afterAll(async () => s3.close());

describe('download links of archive backups with AERIE_S3_PUBLIC_ENDPOINT', () => {
  it('are signed for the public host and download from it; Aerie itself uses AERIE_S3_ENDPOINT', async () => {
    const internal = await startRelay(s3.port);
    // Another name of the same store: what a browser would use.
    const publicEndpoint = `http://localhost:${s3.port}`;
    const app = await startTestApp({
      env: { ...s3.archiveEnv(internal.endpoint), AERIE_S3_PUBLIC_ENDPOINT: `${publicEndpoint}/` },
    });
    try {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const base = `/api/client/servers/${server.identifier}/backups`;
      await writeTree(server.volume, {
        'server.properties': 'motd=public\n',
        'world/level.dat': 'x'.repeat(5000),
      });
      const made = await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} });
      expect(made.statusCode).toBe(200);
      const uuid = made.json<{ attributes: { uuid: string } }>().attributes.uuid;
      await drainJobs(app);
      const row = await app.db.kysely
        .selectFrom('backups')
        .selectAll()
        .where('id', '=', uuid)
        .executeTakeFirstOrThrow();
      expect(row.is_successful).toBe(1);
      // The upload went through the internal endpoint.
      const key = `/${s3.bucket}/${server.id}/${uuid}.tar.gz`;
      expect(internal.requests.some((line) => line.startsWith(`PUT ${key}`))).toBe(true);

      const res = await app.http.inject({
        method: 'GET',
        url: `${base}/${uuid}/download`,
        headers: bearer(token),
      });
      expect(res.statusCode).toBe(200);
      const url = new URL(res.json<{ attributes: { url: string } }>().attributes.url);
      expect(url.origin).toBe(publicEndpoint);
      expect(url.pathname).toBe(key);
      expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
      expect(url.searchParams.get('X-Amz-SignedHeaders')).toContain('host');

      const requestsBefore = internal.requests.length;
      const download = await fetch(url);
      expect(download.status).toBe(200);
      const body = Buffer.from(await download.arrayBuffer());
      expect(createHash('sha256').update(body).digest('hex')).toBe(row.sha256);
      // Signing sent nothing through the internal endpoint, nor did the download.
      expect(internal.requests.slice(requestsBefore)).toEqual([]);

      // The signature covers the host: it is valid for the public host and not for the internal
      // one. (s3rver does not check version 4 signatures, so the test checks it as S3 would.)
      expect(signatureValidFor(url, 'S3RVER', new URL(publicEndpoint).host)).toBe(true);
      expect(signatureValidFor(url, 'S3RVER', new URL(internal.endpoint).host)).toBe(false);
    } finally {
      await app.close();
      await internal.close();
    }
  });

  it('are signed for AERIE_S3_ENDPOINT when no public endpoint is set', async () => {
    const app = await startTestApp({ env: s3.archiveEnv() });
    try {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const base = `/api/client/servers/${server.identifier}/backups`;
      await writeTree(server.volume, { 'a.txt': 'a' });
      const made = await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} });
      const uuid = made.json<{ attributes: { uuid: string } }>().attributes.uuid;
      await drainJobs(app);
      const res = await app.http.inject({
        method: 'GET',
        url: `${base}/${uuid}/download`,
        headers: bearer(token),
      });
      const url = new URL(res.json<{ attributes: { url: string } }>().attributes.url);
      expect(url.origin).toBe(s3.endpoint);
      expect(signatureValidFor(url, 'S3RVER', new URL(s3.endpoint).host)).toBe(true);
      expect((await fetch(url)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

/** RFC 3986 percent-encoding, as AWS Signature Version 4 wants it. */
function awsEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Whether the presigned GET `url` carries a valid Signature Version 4 for a request sent to
 * `host` (its Host header), computed as S3 computes it.
 */
function signatureValidFor(url: URL, secretAccessKey: string, host: string): boolean {
  const params = [...url.searchParams.entries()];
  const signature = url.searchParams.get('X-Amz-Signature');
  const date = url.searchParams.get('X-Amz-Date') ?? '';
  const scope = (url.searchParams.get('X-Amz-Credential') ?? '').split('/').slice(1).join('/');
  const [day = '', region = '', service = ''] = scope.split('/');
  expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
  const query = params
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, value]) => `${awsEncode(name)}=${awsEncode(value)}`)
    .sort()
    .join('&');
  const path = url.pathname
    .split('/')
    .map((segment) => awsEncode(decodeURIComponent(segment)))
    .join('/');
  const canonical = ['GET', path, query, `host:${host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', date, scope, createHash('sha256').update(canonical).digest('hex')].join(
    '\n',
  );
  const hmac = (key: string | Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  let key = hmac(`AWS4${secretAccessKey}`, day);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign).digest('hex') === signature;
}

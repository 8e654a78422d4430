/**
 * A real S3-compatible server for tests (s3rver, files in a temporary directory, a random port),
 * and a TCP relay in front of it that can cut the connection half-way through an upload.
 *
 * s3rver 3.7 does not implement AbortMultipartUpload (DELETE /bucket/key?uploadId=…: it answers
 * 405 MethodNotAllowed). The helper adds it ahead of s3rver's routes: the upload's parts are
 * removed, as a real store does, so tests can check that an interrupted upload leaves nothing.
 * Nor ListMultipartUploads (GET /bucket?uploads: 501 NotImplemented), which the helper adds too,
 * from the same directory (an upload's start is when its directory was written).
 */
import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import fs from 'node:fs/promises';
import net, { type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

export const S3_BUCKET = 'aerie-backups';
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3 {
  endpoint: string;
  port: number;
  bucket: string;
  /** Where s3rver keeps the parts of unfinished multipart uploads (one directory each). */
  uploadsDir: string;
  /** The environment that points Aerie's backup storage at this server (through `endpoint`). */
  env(endpoint?: string): Record<string, string>;
  /**
   * `env`, with new backups made as whole archives (AERIE_BACKUP_FORMAT=archive: one object
   * `<server uuid>/<backup uuid>.tar.gz` each, uploaded in parts), for the tests of that format.
   */
  archiveEnv(endpoint?: string): Record<string, string>;
  client: S3Client;
  /** Keys of every object in the bucket. */
  keys(): Promise<string[]>;
  exists(key: string): Promise<boolean>;
  /** Multipart uploads begun and neither completed nor aborted. */
  pendingUploads(): Promise<string[]>;
  close(): Promise<void>;
}

interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
}

export async function startS3(): Promise<TestS3> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 'aerie-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: S3_BUCKET, configs: [] }],
  });
  const uploadsDir = path.join(directory, S3_BUCKET, '._S3rver_uploads');
  addAbortMultipartUpload(server, uploadsDir);
  addListMultipartUploads(server, uploadsDir);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const env = (through = endpoint): Record<string, string> => ({
    AERIE_BACKUP_STORAGE: 's3',
    AERIE_S3_BUCKET: S3_BUCKET,
    AERIE_S3_ENDPOINT: through,
    AERIE_S3_REGION: 'us-east-1',
    AERIE_S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
  });
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: CREDENTIALS,
  });
  return {
    endpoint,
    port,
    bucket: S3_BUCKET,
    uploadsDir,
    client,
    env,
    archiveEnv: (through = endpoint) => ({ ...env(through), AERIE_BACKUP_FORMAT: 'archive' }),
    keys: async () => {
      const listing = await client.send(new ListObjectsV2Command({ Bucket: S3_BUCKET }));
      return (listing.Contents ?? []).map((object) => object.Key ?? '').sort();
    },
    exists: async (key) => {
      try {
        await client.send(new HeadObjectCommand({ Bucket: S3_BUCKET, Key: key }));
        return true;
      } catch (error) {
        if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404)
          return false;
        throw error;
      }
    },
    pendingUploads: async () => {
      try {
        return (await fs.readdir(uploadsDir)).sort();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
    },
    close: async () => {
      client.destroy();
      await server.close();
      await fs.rm(directory, { recursive: true, force: true });
    },
  };
}

/** Inserts, just before s3rver's router, a handler for DELETE /bucket/key?uploadId=… */
function addAbortMultipartUpload(server: S3rver, uploadsDir: string): void {
  const stack = (server as unknown as { middleware: unknown[] }).middleware;
  const abort = async (ctx: KoaContext, next: () => Promise<void>): Promise<void> => {
    const uploadId = ctx.query.uploadId;
    if (ctx.method !== 'DELETE' || typeof uploadId !== 'string') return next();
    if (!/^[A-Za-z0-9_-]+$/.test(uploadId)) {
      ctx.status = 400;
      return;
    }
    const dir = path.join(uploadsDir, uploadId);
    const existed = await fs.stat(dir).then(
      () => true,
      () => false,
    );
    await fs.rm(dir, { recursive: true, force: true });
    ctx.status = existed ? 204 : 404;
    ctx.body = existed ? null : { Error: { Code: 'NoSuchUpload', Message: 'The upload does not exist' } };
  };
  stack.splice(stack.length - 1, 0, abort);
}

/** Inserts, just before s3rver's router, a handler for GET /bucket?uploads (one page: all of them). */
function addListMultipartUploads(server: S3rver, uploadsDir: string): void {
  const stack = (server as unknown as { middleware: unknown[] }).middleware;
  const list = async (ctx: KoaContext, next: () => Promise<void>): Promise<void> => {
    if (
      ctx.method !== 'GET' ||
      ctx.query.uploads === undefined ||
      ctx.path.replace(/\/$/, '') !== `/${S3_BUCKET}`
    )
      return next();
    const prefix = typeof ctx.query.prefix === 'string' ? ctx.query.prefix : '';
    const uploads = [];
    for (const uploadId of (await fs.readdir(uploadsDir).catch(() => [])).sort()) {
      const keyFile = path.join(uploadsDir, uploadId, 'key');
      const key = await fs.readFile(keyFile, 'utf8').catch(() => undefined);
      if (key === undefined || !key.startsWith(prefix)) continue;
      const { mtime } = await fs.stat(keyFile);
      uploads.push({ Key: key, UploadId: uploadId, Initiated: mtime.toISOString() });
    }
    ctx.status = 200;
    ctx.body = {
      ListMultipartUploadsResult: {
        '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
        Bucket: S3_BUCKET,
        KeyMarker: '',
        UploadIdMarker: '',
        Prefix: prefix,
        MaxUploads: 1000,
        IsTruncated: false,
        Upload: uploads,
      },
    };
  };
  stack.splice(stack.length - 1, 0, list);
}

export interface Relay {
  endpoint: string;
  /** The request lines that went through (`PUT /bucket/key?partNumber=1&uploadId=… HTTP/1.1`). */
  requests: string[];
  /** The same requests' header blocks, request line included, lower-cased. */
  heads: string[];
  /** Settles once the relay has cut every connection. */
  cut: Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP relay to `port`, noting the request lines that pass. With `cutAfterBytes`, it lets that
 * many bytes through from clients, then drops every connection and stops listening: the store
 * vanishes half-way through an upload.
 */
export async function startRelay(port: number, cutAfterBytes = Infinity): Promise<Relay> {
  const requests: string[] = [];
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  let forwarded = 0;
  let markCut: () => void = () => {};
  const cut = new Promise<void>((resolve) => (markCut = resolve));
  const relay = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    let carry = ''; // the end of the previous chunk: a request's head may straddle two
    client.on('data', (data: Buffer) => {
      forwarded += data.length;
      const text = carry + data.toString('latin1');
      for (const match of text.matchAll(
        /(?:GET|PUT|POST|DELETE|HEAD) \/\S* HTTP\/1\.1\r\n(?:[^\r\n]+\r\n)*\r\n/g,
      )) {
        if (match.index + match[0].length <= carry.length) continue;
        requests.push(match[0].slice(0, match[0].indexOf('\r\n')));
        heads.push(match[0].toLowerCase());
      }
      carry = text.slice(-8192);
      if (forwarded > cutAfterBytes) return cutAll();
      upstream.write(data);
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const cutAll = () => {
    relay.close();
    for (const socket of sockets) socket.destroy();
    markCut();
  };
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port: relayPort } = relay.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${relayPort}`,
    requests,
    heads,
    cut,
    close: async () => {
      cutAll();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}

/**
 * A snapshot repository in an S3-compatible bucket: each object of the repository an object of
 * the bucket, under a key prefix (`<server uuid>/repository/`). Packs are at most a few tens of
 * MiB, so each is one PutObject (which S3 makes visible whole or not at all), and blobs are read
 * back as byte ranges of their pack: nothing is ever held in memory beyond the object or range
 * asked for.
 *
 * The S3 client is loaded at the first request (as s3-backup-storage.ts does): a thread whose
 * repository is on local disk never pays for it. Errors follow the other S3 code's conventions:
 * a missing object is a RepositoryMissing, and a passing failure of the store (a network error,
 * a 5xx, throttling) is marked as the store's (store-unreachable.ts) so a job tries again later.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import type { S3Settings } from '../../config.ts';
import { markFromStore } from '../stores/store-unreachable.ts';
import { RepositoryMissing, type RepositoryStore, type StoredObject } from './repository-store.ts';

/** The SDK and Aerie's way of building a client (about 80 ms of CPU and 20 MB to load). */
async function loadSdk() {
  const [client, object] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('../stores/s3-object.ts'),
  ]);
  return { ...client, s3Client: object.s3Client, isMissing: object.isMissing };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

interface Connected {
  sdk: Sdk;
  client: S3Client;
}

/** Keys a ListObjectsV2 page returns at most (S3's own limit). */
const PAGE = 1000;

export interface S3RepositoryStoreOptions {
  /** Keys asked for per ListObjectsV2 page (S3's most, 1000, unless set: tests page sooner). */
  pageSize?: number;
}

export class S3RepositoryStore implements RepositoryStore {
  readonly readsAreRequests = true;
  readonly writerWaitsForPuts = true;

  /** The key prefix, `` or ending in `/`. */
  readonly prefix: string;
  private readonly pageSize: number;
  private loaded: Promise<Connected> | undefined;

  constructor(
    private readonly s3: S3Settings,
    /** Where the repository's objects are in the bucket (`<server uuid>/repository/`). */
    prefix: string,
    options: S3RepositoryStoreOptions = {},
  ) {
    const trimmed = prefix.replace(/^\/+/, '');
    this.prefix = trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
    this.pageSize = options.pageSize ?? PAGE;
  }

  get where(): string {
    return `s3://${this.s3.bucket}/${this.prefix}`;
  }

  /** The SDK and a client (which opens connections only when a request is sent). */
  private connect(): Promise<Connected> {
    this.loaded ??= loadSdk().then((sdk) => ({ sdk, client: sdk.s3Client(this.s3) }));
    return this.loaded;
  }

  /**
   * Runs a request (and the reading of its body): a missing object is a RepositoryMissing of
   * `key` when one is given, and a passing failure is marked as the store's.
   */
  private async send<T>(key: string | null, call: (sdk: Sdk, client: S3Client) => Promise<T>): Promise<T> {
    const { sdk, client } = await this.connect();
    try {
      return await call(sdk, client);
    } catch (error) {
      if (key !== null && objectMissing(sdk, error)) throw new RepositoryMissing(key);
      throw markFromStore(error);
    }
  }

  private keyOf(key: string): string {
    return this.prefix + key;
  }

  /**
   * One PutObject of the parts put together (the body must be replayable for the SDK's retries,
   * so it is one buffer, not a stream), with its MD5: a body damaged on its way is refused by
   * the store instead of being found only at a restore.
   */
  async put(key: string, parts: readonly Uint8Array[]): Promise<void> {
    const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const md5 = createHash('md5').update(body).digest('base64');
    await this.send(null, (sdk, client) =>
      client.send(
        new sdk.PutObjectCommand({
          Bucket: this.s3.bucket,
          Key: this.keyOf(key),
          Body: body,
          ContentLength: body.length,
          ContentMD5: md5,
          ContentType: 'application/octet-stream',
        }),
      ),
    );
  }

  get(key: string): Promise<Buffer> {
    return this.send(key, async (sdk, client) => {
      const object = await client.send(
        new sdk.GetObjectCommand({ Bucket: this.s3.bucket, Key: this.keyOf(key) }),
      );
      return bodyOf(object.Body);
    });
  }

  /**
   * `length` bytes from `offset`, or fewer when the object ends sooner (as a local file reads):
   * the caller checks what it got against what it expected.
   */
  async getRangeInto(key: string, offset: number, target: Uint8Array): Promise<number> {
    const bytes = (await this.getRange(key, offset, target.length)).subarray(0, target.length);
    target.set(bytes);
    return bytes.length;
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    if (length <= 0) {
      // A range cannot be empty; the object must still be there.
      await this.send(key, (sdk, client) =>
        client.send(new sdk.HeadObjectCommand({ Bucket: this.s3.bucket, Key: this.keyOf(key) })),
      );
      return Buffer.alloc(0);
    }
    return this.send(key, async (sdk, client) => {
      let object;
      try {
        object = await client.send(
          new sdk.GetObjectCommand({
            Bucket: this.s3.bucket,
            Key: this.keyOf(key),
            Range: `bytes=${offset}-${offset + length - 1}`,
          }),
        );
      } catch (error) {
        // The range starts at or past the object's end: nothing of it is there.
        if (error instanceof sdk.S3ServiceException && error.$metadata.httpStatusCode === 416) {
          return Buffer.alloc(0);
        }
        throw error;
      }
      const bytes = await bodyOf(object.Body);
      // A store that ignored the range sent the whole object: keep the part asked for.
      if (object.ContentRange === undefined) return bytes.subarray(offset, offset + length);
      return bytes.length > length ? bytes.subarray(0, length) : bytes;
    });
  }

  /** Every object under `prefix`, keys relative to the store's prefix, page by page. */
  async list(prefix: string): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    const full = this.keyOf(prefix);
    let token: string | undefined;
    do {
      const page = await this.send(null, (sdk, client) =>
        client.send(
          new sdk.ListObjectsV2Command({
            Bucket: this.s3.bucket,
            Prefix: full,
            MaxKeys: this.pageSize,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        ),
      );
      for (const object of page.Contents ?? []) {
        const key = object.Key;
        if (key === undefined || !key.startsWith(full)) continue;
        found.push({
          key: key.slice(this.prefix.length),
          bytes: object.Size ?? 0,
          modifiedAt: object.LastModified ?? new Date(0),
        });
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return found;
  }

  /** Deletes the object; one already gone counts as removed (S3 answers so too). */
  async delete(key: string): Promise<void> {
    try {
      await this.send(key, (sdk, client) =>
        client.send(new sdk.DeleteObjectCommand({ Bucket: this.s3.bucket, Key: this.keyOf(key) })),
      );
    } catch (error) {
      if (error instanceof RepositoryMissing) return;
      throw error;
    }
  }

  /** Nothing to do: an object S3 acknowledged is durable. */
  async sync(): Promise<void> {}

  /** Closes the client's connections (a later request makes a new client). */
  async close(): Promise<void> {
    const loaded = this.loaded;
    this.loaded = undefined;
    if (loaded === undefined) return;
    const { client } = await loaded.catch(() => ({ client: null }));
    client?.destroy();
  }
}

/** Whether an S3 error says the object is not there (a missing bucket is an error of its own). */
function objectMissing(sdk: Sdk, error: unknown): boolean {
  return sdk.isMissing(error) && (error as Error).name !== 'NoSuchBucket';
}

/** A response body read whole, as a Buffer over the SDK's bytes (no copy). */
async function bodyOf(body: { transformToByteArray(): Promise<Uint8Array> } | undefined): Promise<Buffer> {
  if (body === undefined) return Buffer.alloc(0);
  const bytes = await body.transformToByteArray();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

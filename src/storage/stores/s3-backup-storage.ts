import type { S3Client } from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { S3Settings } from '../../config.ts';
import { runInThread } from '../../shared/thread.ts';
import type { RemovalFailure, StoredEntry } from './archive-layout.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import type { ArchiveLocation, ArchiveTarget, BackupStorage } from './backup-storage.ts';
import type { S3UploadTarget } from './s3-object.ts';
import { s3Repository, type RepositoryLocation } from '../repository/repository-location.ts';

const MIB = 1024 * 1024;
/**
 * 8 MiB parts, two at a time: at most 80 GiB per archive (10,000 parts), about 30 MiB held while
 * uploading (16 MiB parts took a backup's peak from 184 to 215 MiB, over the 200 MB target).
 */
const DEFAULT_PART_SIZE = 8 * MIB;
const DEFAULT_QUEUE_SIZE = 2;

/**
 * The S3 client (about 80 ms of CPU and 20 MB to load): a process whose backups are local never
 * loads it.
 */
async function loadSdk() {
  const [client, presigner, object] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/s3-request-presigner'),
    import('./s3-object.ts'),
  ]);
  return { ...client, getSignedUrl: presigner.getSignedUrl, ...object };
}
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

/**
 * The SDK and two clients: `client` talks to the store at AERIE_S3_ENDPOINT; `signer` signs
 * download links for AERIE_S3_PUBLIC_ENDPOINT, where browsers reach it (the same client when it
 * is not set). Signing sends nothing: `signer` never opens a connection.
 */
interface Connected {
  sdk: Sdk;
  client: S3Client;
  signer: S3Client;
}

/**
 * The inventory thread's young generation, 4 MiB: it loads the client and reads listings, whose
 * objects do not outlive a page. V8's default let it grow to 16 MiB; the thread, which retention
 * starts at any moment (within a minute of the server's start, then hourly), raised the server's
 * resident memory by 33 MiB at its peak, 28 MiB with this.
 */
const INVENTORY_THREAD = { resourceLimits: { maxYoungGenerationSizeMb: 4 } };

/** What the inventory thread (`s3-inventory.thread.ts`) is asked to do. */
export type S3InventoryInput =
  { op: 'list'; s3: S3Settings } | { op: 'remove'; s3: S3Settings; entries: readonly StoredEntry[] };

export interface S3BackupStorageOptions {
  /** Local directory for scratch files (an archive imported from a file passes through it). */
  scratchDir: string;
  /** Bytes per uploaded part (at least 5 MiB). */
  partSize?: number;
  /** Parts uploaded at once. */
  queueSize?: number;
  /** The time download links are signed at (and expire from). */
  clock?: () => Date;
}

/**
 * Backups in an S3-compatible bucket, one object per archive: `<server uuid>/<backup uuid>.tar.gz`.
 * Archives are uploaded in parts as they are made and read back as a stream; downloads are
 * presigned URLs of the object.
 */
export class S3BackupStorage implements BackupStorage {
  readonly disk = 's3';
  private loaded: Promise<Connected> | undefined;
  private readonly partSize: number;
  private readonly queueSize: number;

  constructor(
    private readonly s3: S3Settings,
    private readonly options: S3BackupStorageOptions,
  ) {
    this.partSize = options.partSize ?? DEFAULT_PART_SIZE;
    this.queueSize = options.queueSize ?? DEFAULT_QUEUE_SIZE;
  }
  repository(serverId: string): RepositoryLocation {
    return s3Repository(this.s3, serverId);
  }

  /**
   * Loads the S3 client now, in this thread. A process that serves the API calls this while it
   * starts: loaded at the first download or deletion instead, it would hold up the event loop
   * then (130 to 190 ms of wall time here). Other processes never do: `backup create` and the
   * worker's backups upload from the archive thread, which loads its own client, and a copy
   * here would only add about 20 MB to their peak memory.
   */
  preload(): void {
    this.connect().catch(() => undefined);
  }

  /** The SDK and its clients (which open connections only when a request is sent). */
  private connect(): Promise<Connected> {
    this.loaded ??= loadSdk().then((sdk) => {
      const client = sdk.s3Client(this.s3);
      const { publicEndpoint } = this.s3;
      const signer =
        publicEndpoint === null ? client : sdk.s3Client({ ...this.s3, endpoint: publicEndpoint });
      return { sdk, client, signer };
    });
    return this.loaded;
  }

  /** Sends a command built from the SDK; a missing object is an ArchiveError 'not-found'. */
  private async send<T>(command: (sdk: Sdk, client: S3Client, signer: S3Client) => Promise<T>): Promise<T> {
    const { sdk, client, signer } = await this.connect();
    try {
      return await command(sdk, client, signer);
    } catch (error) {
      if (sdk.isMissing(error))
        throw new ArchiveError('not-found', 'the backup archive is missing from storage');
      throw error;
    }
  }

  private keyOf(serverId: string, backupId: string): string {
    return `${serverId}/${backupId}.tar.gz`;
  }

  private uploadTarget(serverId: string, backupId: string): S3UploadTarget {
    return {
      s3: this.s3,
      key: this.keyOf(serverId, backupId),
      partSize: this.partSize,
      queueSize: this.queueSize,
    };
  }

  newArchive(serverId: string, backupId: string): Promise<ArchiveTarget> {
    return Promise.resolve({ kind: 's3', upload: this.uploadTarget(serverId, backupId) });
  }

  /** Nothing to do: the upload completed as the archive was written. */
  async keep(): Promise<void> {}

  /** Nothing to do: an upload that did not complete was aborted where it was written. */
  async discard(): Promise<void> {}

  async put(serverId: string, backupId: string, file: string): Promise<void> {
    const { sdk } = await this.connect();
    await sdk.uploadStream(this.uploadTarget(serverId, backupId), createReadStream(file));
    await fs.rm(file, { force: true });
  }

  get(serverId: string, backupId: string): Promise<Readable> {
    const Key = this.keyOf(serverId, backupId);
    return this.send(async (sdk, client) => {
      const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.s3.bucket, Key }));
      return object.Body as Readable;
    });
  }

  locate(serverId: string, backupId: string): Promise<ArchiveLocation> {
    const key = this.keyOf(serverId, backupId);
    return this.send(async (sdk, client) => {
      await client.send(new sdk.HeadObjectCommand({ Bucket: this.s3.bucket, Key: key }));
      return { s3: this.s3, key };
    });
  }

  /**
   * A presigned GET of the object, saved under `filename`, for the store's public endpoint when
   * one is set (the signature covers the host: the link works only there).
   */
  downloadUrl(serverId: string, backupId: string, seconds: number, filename: string): Promise<string> {
    return this.send((sdk, _client, signer) => {
      const command = new sdk.GetObjectCommand({
        Bucket: this.s3.bucket,
        Key: this.keyOf(serverId, backupId),
        ResponseContentDisposition: `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, '-')}"`,
        ResponseContentType: 'application/gzip',
      });
      return sdk.getSignedUrl(signer, command, {
        expiresIn: seconds,
        ...(this.options.clock ? { signingDate: this.options.clock() } : {}),
      });
    });
  }

  async delete(serverId: string, backupId: string): Promise<void> {
    const Key = this.keyOf(serverId, backupId);
    await this.send((sdk, client) =>
      client.send(new sdk.DeleteObjectCommand({ Bucket: this.s3.bucket, Key })),
    );
  }

  async scratchFile(serverId: string, backupId: string): Promise<string> {
    const dir = path.join(this.options.scratchDir, serverId);
    await fs.mkdir(dir, { recursive: true, mode: 0o750 });
    return path.join(dir, `${backupId}.tar.gz.incoming`);
  }

  /**
   * The bucket's archives and unfinished uploads. Listed, like `remove`, from a thread that loads
   * its own client and ends with the work: the worker process reconciles every hour, and its
   * main thread otherwise never loads the client (see `preload`).
   */
  inventory(): Promise<StoredEntry[]> {
    const input: S3InventoryInput = { op: 'list', s3: this.s3 };
    return runInThread<StoredEntry[]>(import.meta.url, './s3-inventory.thread', input, INVENTORY_THREAD);
  }

  async remove(entries: readonly StoredEntry[]): Promise<RemovalFailure[]> {
    if (entries.length === 0) return [];
    const input: S3InventoryInput = { op: 'remove', s3: this.s3, entries };
    return runInThread<RemovalFailure[]>(import.meta.url, './s3-inventory.thread', input, INVENTORY_THREAD);
  }

  /** Closes the store's connections. */
  async close(): Promise<void> {
    const loaded = this.loaded;
    this.loaded = undefined;
    if (loaded === undefined) return;
    const { client, signer } = await loaded;
    client.destroy();
    if (signer !== client) signer.destroy();
  }
}

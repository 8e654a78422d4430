/**
 * Reading and writing one archive in an S3-compatible bucket, as a stream, from whichever thread
 * does the work: everything here starts from plain values (S3Object) that a worker thread receives
 * as a copy, and makes its own client.
 */
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { createReadStream } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Settings } from '../../config.ts';
import { parseArchiveKey, type RemovalFailure, type StoredEntry } from './archive-layout.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import type { ArchiveSink } from '../archive/archive-writer.ts';

const MIB = 1024 * 1024;

/** One object of a bucket. */
export interface S3Object {
  s3: S3Settings;
  key: string;
}

/** An object to upload in parts, and how: memory held is about (queueSize + 1) × partSize. */
export interface S3UploadTarget extends S3Object {
  /** Bytes per part (S3's minimum is 5 MiB); an archive may have 10,000 parts. */
  partSize: number;
  /** Parts uploaded at once. */
  queueSize: number;
}

export function s3Client(s3: S3Settings): S3Client {
  return new S3Client({
    region: s3.region,
    ...(s3.endpoint === null ? {} : { endpoint: s3.endpoint }),
    forcePathStyle: s3.forcePathStyle,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    // The SDK's default (a CRC32 header or trailer on every part) is refused by several
    // S3-compatible stores; a restore checks the archive's SHA-256 end to end either way.
    requestChecksumCalculation: s3.checksums === 'when_supported' ? 'WHEN_SUPPORTED' : 'WHEN_REQUIRED',
    // A store that stops answering fails the request (which is retried) instead of holding a
    // backup or restore until the job's time limit.
    requestHandler: { connectionTimeout: 10_000, socketTimeout: 120_000 },
  });
}

/** Whether an S3 error says the object (or its bucket) is not there. */
export function isMissing(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  return error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404;
}

/**
 * Runs `use` with the archive to read: a local path as it is, or an S3 object as a stream of its
 * bytes straight from the store (never written to a file first). The stream and its connection
 * are released once `use` settles.
 */
export async function withArchiveStream<T>(
  archive: string | S3Object,
  use: (archive: string | Readable) => Promise<T>,
): Promise<T> {
  if (typeof archive === 'string') return use(archive);
  return withObjectBody(archive, null, use);
}

/**
 * Runs `use` with a stream of `length` bytes of the archive from `offset` on: a local file read
 * from there, or one ranged GET of the S3 object. The stream may end early (a file that is
 * shorter than that); it is released once `use` settles.
 */
export async function withArchiveRange<T>(
  archive: string | S3Object,
  range: { offset: number; length: number },
  use: (bytes: Readable) => Promise<T>,
): Promise<T> {
  if (typeof archive !== 'string') return withObjectBody(archive, range, use);
  const stream = createReadStream(archive, {
    start: range.offset,
    end: range.offset + range.length - 1,
    highWaterMark: RANGE_CHUNK,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'ENOENT' ? new ArchiveError('not-found', 'the archive file does not exist') : error,
        ),
      );
    });
    return await use(stream);
  } finally {
    stream.destroy();
  }
}

/** Local reads of a range: a gzip member is about 1 MiB. */
const RANGE_CHUNK = 256 * 1024;

async function withObjectBody<T>(
  archive: S3Object,
  range: { offset: number; length: number } | null,
  use: (body: Readable) => Promise<T>,
): Promise<T> {
  const client = s3Client(archive.s3);
  try {
    let raw: Readable;
    let body: Readable;
    try {
      const object = await client.send(
        new GetObjectCommand({
          Bucket: archive.s3.bucket,
          Key: archive.key,
          ...(range === null ? {} : { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` }),
        }),
      );
      raw = body = object.Body as Readable;
      // A store that ignored the range sends the whole object: the bytes before it are skipped.
      if (range !== null && object.ContentRange === undefined && range.offset > 0)
        body = Readable.from(skipping(raw, range.offset));
    } catch (error) {
      if (isMissing(error)) throw new ArchiveError('not-found', 'the backup archive is missing from storage');
      // The range starts past the object's end: it is not the archive its catalog was made from.
      if (range !== null && error instanceof S3ServiceException && error.$metadata.httpStatusCode === 416)
        throw new ArchiveError('corrupt', 'the backup archive is shorter than its catalog says');
      throw error;
    }
    try {
      return await use(body);
    } finally {
      body.destroy();
      raw.destroy();
    }
  } finally {
    client.destroy();
  }
}

/** `source` without its first `bytes` bytes. */
async function* skipping(source: AsyncIterable<Buffer>, bytes: number): AsyncGenerator<Buffer> {
  let left = bytes;
  for await (const chunk of source) {
    if (left >= chunk.length) {
      left -= chunk.length;
      continue;
    }
    yield left > 0 ? chunk.subarray(left) : chunk;
    left = 0;
  }
}

/**
 * A sink that uploads what is written to it to `target` in parts, while it is written: the
 * archive is never whole in memory or on disk. If the upload fails, the stream is destroyed with
 * its error (so the writer stops). `discard` ends an unfinished upload: its parts are deleted
 * and no object appears.
 */
export function s3UploadSink(
  target: S3UploadTarget,
  /** Called each time a part has been uploaded. */
  onPartUploaded?: () => void,
): ArchiveSink {
  const client = s3Client(target.s3);
  const stream = new PassThrough({ highWaterMark: MIB });
  const upload = new Upload({
    client,
    params: { Bucket: target.s3.bucket, Key: target.key, Body: stream, ContentType: 'application/gzip' },
    partSize: target.partSize,
    queueSize: target.queueSize,
    leavePartsOnError: false,
  });
  // Destroying the body (rather than upload.abort()) makes done() settle only once the multipart
  // upload has been aborted on the store.
  if (onPartUploaded) upload.on('httpUploadProgress', () => onPartUploaded());
  const done = upload.done();
  done.catch((error: unknown) => stream.destroy(error instanceof Error ? error : new Error(String(error))));
  return {
    stream,
    keepsChunks: true, // the upload reads them from the stream's buffer later
    finish: async () => {
      try {
        await done;
      } finally {
        client.destroy();
      }
    },
    discard: async () => {
      if (!stream.writableFinished) stream.destroy(new Error('the archive was not finished'));
      try {
        // Everything was written and the upload went through after all: take the object away.
        await done;
        await client.send(new DeleteObjectCommand({ Bucket: target.s3.bucket, Key: target.key }));
      } catch {
        // the upload failed (and was aborted): the failure is the writer's to report
      } finally {
        client.destroy();
      }
    },
  };
}

/** Uploads a readable stream (a local file) to `target`, in parts; on failure no object is left. */
export async function uploadStream(target: S3UploadTarget, source: Readable): Promise<void> {
  const sink = s3UploadSink(target);
  try {
    await pipeline(source, sink.stream);
    await sink.finish();
  } catch (error) {
    await sink.discard();
    throw error;
  }
}

/**
 * Aborts the multipart uploads of `object`'s key still open on the store: those of an earlier
 * attempt at the same archive, which ended (its process killed, the store cut off) without
 * completing or aborting its own, and whose parts the store would otherwise keep. Called before
 * an attempt begins its own upload. Best effort: a store that cannot list uploads (or fails to)
 * leaves them to `backup reconcile`, and the backup goes on.
 */
export async function abortEarlierUploads(object: S3Object): Promise<void> {
  const client = s3Client(object.s3);
  try {
    for (const upload of await listUploads(client, object.s3.bucket, object.key)) {
      if (upload.key === object.key) await abortUpload(client, object.s3.bucket, upload.key, upload.uploadId);
    }
  } catch {
    // left for reconcile
  } finally {
    client.destroy();
  }
}

/**
 * The bucket's objects and unfinished multipart uploads whose keys are in Aerie's layout (an
 * upload whose start the store does not give is left out: it is never taken for an old one).
 */
export async function listStored(s3: S3Settings): Promise<StoredEntry[]> {
  const client = s3Client(s3);
  try {
    const entries: StoredEntry[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: s3.bucket, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const object of page.Contents ?? []) {
        const owner = parseArchiveKey(object.Key ?? '');
        if (owner === undefined || object.LastModified === undefined) continue;
        entries.push({
          kind: 'archive',
          ...owner,
          location: object.Key!,
          modifiedAt: object.LastModified,
          bytes: object.Size ?? null,
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    // A store that does not list multipart uploads (some S3-compatible ones) still has its
    // objects reconciled; its unfinished uploads are left to its own expiry rules.
    const uploads = await listUploads(client, s3.bucket).catch((error: unknown) => {
      if (isNotImplemented(error)) return [];
      throw error;
    });
    for (const upload of uploads) {
      const owner = parseArchiveKey(upload.key);
      if (owner === undefined || upload.initiated === undefined) continue;
      entries.push({
        kind: 'upload',
        ...owner,
        location: upload.key,
        modifiedAt: upload.initiated,
        bytes: null,
        uploadId: upload.uploadId,
      });
    }
    return entries;
  } finally {
    client.destroy();
  }
}

/** Deletes the objects and aborts the uploads `listStored` listed; one gone already counts as removed. */
export async function removeStored(
  s3: S3Settings,
  entries: readonly StoredEntry[],
): Promise<RemovalFailure[]> {
  const client = s3Client(s3);
  const failures: RemovalFailure[] = [];
  try {
    for (const entry of entries) {
      try {
        if (entry.kind === 'upload')
          await abortUpload(client, s3.bucket, entry.location, entry.uploadId ?? '');
        else await client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: entry.location }));
      } catch (error) {
        failures.push({ entry, error: error instanceof Error ? error.message : String(error) });
      }
    }
    return failures;
  } finally {
    client.destroy();
  }
}

/** Every unfinished multipart upload of the bucket (whose key starts with `prefix`). */
async function listUploads(
  client: S3Client,
  bucket: string,
  prefix?: string,
): Promise<{ key: string; uploadId: string; initiated: Date | undefined }[]> {
  const uploads: { key: string; uploadId: string; initiated: Date | undefined }[] = [];
  let marker: { KeyMarker?: string; UploadIdMarker?: string } = {};
  for (;;) {
    const page = await client.send(
      new ListMultipartUploadsCommand({ Bucket: bucket, ...(prefix ? { Prefix: prefix } : {}), ...marker }),
    );
    for (const upload of page.Uploads ?? []) {
      if (upload.Key === undefined || upload.UploadId === undefined) continue;
      uploads.push({ key: upload.Key, uploadId: upload.UploadId, initiated: upload.Initiated });
    }
    if (!page.IsTruncated || page.NextKeyMarker === undefined) return uploads;
    marker = {
      KeyMarker: page.NextKeyMarker,
      ...(page.NextUploadIdMarker ? { UploadIdMarker: page.NextUploadIdMarker } : {}),
    };
  }
}

function isNotImplemented(error: unknown): boolean {
  return (
    error instanceof S3ServiceException &&
    (error.name === 'NotImplemented' || error.$metadata.httpStatusCode === 501)
  );
}

/** Aborts one multipart upload; one that is gone already (completed or aborted) is no error. */
async function abortUpload(client: S3Client, bucket: string, key: string, uploadId: string): Promise<void> {
  try {
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  } catch (error) {
    if (error instanceof S3ServiceException && (error.name === 'NoSuchUpload' || isMissing(error))) return;
    throw error;
  }
}

/**
 * Reading and writing one archive in an S3-compatible bucket, as a stream, from whichever thread
 * does the work: everything here starts from plain values (S3Object) that a worker thread receives
 * as a copy, and makes its own client.
 */
import { DeleteObjectCommand, GetObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Settings } from '../config.ts';
import { ArchiveError } from './archive.types.ts';
import type { ArchiveSink } from './create-archive.ts';

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
  const client = s3Client(archive.s3);
  try {
    let body: Readable;
    try {
      const object = await client.send(new GetObjectCommand({ Bucket: archive.s3.bucket, Key: archive.key }));
      body = object.Body as Readable;
    } catch (error) {
      if (isMissing(error)) throw new ArchiveError('not-found', 'the backup archive is missing from storage');
      throw error;
    }
    try {
      return await use(body);
    } finally {
      body.destroy();
    }
  } finally {
    client.destroy();
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

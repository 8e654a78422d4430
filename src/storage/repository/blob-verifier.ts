/**
 * Checking read blobs in a thread of its own, beside the thread that reads them: a restore or an
 * extract keeps both cores busy, one fetching chunks and writing files, the other decompressing
 * and hashing them (about half of the work each, on the bench volume). A blob's stored bytes and
 * the buffer to decompress into move to the checking thread and back (transferred, never
 * copied), to be used again for the next blob.
 */
import zlib from 'node:zlib';
import { ServingThread, threadEntry } from '../../shared/thread.ts';
import type { BlobDecoder } from './blob-compressor.ts';
import { blobId } from './repository.ts';

/** Why a blob failed its check. */
export type BlobFault = 'corrupt' | 'mismatch';

/** What the index says a blob is. */
export interface BlobFacts {
  /** The blob's id (the SHA-256 of its content). */
  blob: string;
  compressed: boolean;
  /** Bytes of content. */
  raw: number;
  /** Bytes stored, at the start of the input buffer. */
  length: number;
}

/** A blob sent to be checked, and sent back: its buffers, and the fault found, if any. */
export interface VerifyMessage extends BlobFacts {
  /** The request's number. */
  id: number;
  /** Holds the stored bytes; the content too when not compressed. */
  input: ArrayBuffer;
  /** Receives the content of a compressed blob. */
  output: ArrayBuffer | null;
  fault: BlobFault | null;
}

/** A checked blob's buffers back: the content is at the start of `output` when there is one, else of `input`. */
export interface Verified {
  input: ArrayBuffer;
  output: ArrayBuffer | null;
  fault: BlobFault | null;
}

/** What is wrong with a blob (its buffers as a VerifyMessage holds them), or null when it is whole. */
export function faultOf(
  blob: BlobFacts & { input: ArrayBuffer; output: ArrayBuffer | null },
  decoder: BlobDecoder | null,
): BlobFault | null {
  let content: Uint8Array;
  try {
    content = contentOf(blob, decoder);
  } catch {
    return 'corrupt';
  }
  return content.length === blob.raw && blobId(content) === blob.blob ? null : 'mismatch';
}

/** The blob's content, at the start of `output` when compressed; throws when it will not decompress. */
function contentOf(
  blob: BlobFacts & { input: ArrayBuffer; output: ArrayBuffer | null },
  decoder: BlobDecoder | null,
): Uint8Array {
  const stored = new Uint8Array(blob.input, 0, blob.length);
  if (!blob.compressed) return stored;
  const into = new Uint8Array(blob.output!, 0, blob.raw);
  if (decoder !== null) return decoder.decodeInto(stored, into);
  const content = zlib.zstdDecompressSync(stored, { maxOutputLength: Math.max(blob.raw, 1) });
  if (content.length !== blob.raw) throw new Error('its content is not the size the index gives');
  into.set(content);
  return into;
}

/** A checking thread serving the thread that made it (not holding it open while idle). */
export class BlobVerifier {
  private readonly thread = new ServingThread<VerifyMessage, VerifyMessage>(
    threadEntry(import.meta.url, './blob-verifier.thread'),
    'blob checking',
    true,
  );

  /**
   * Decompresses (into `output`, when compressed) and hashes the blob whose stored bytes start
   * `input`. Both buffers move to the thread until this resolves with them.
   */
  verify(facts: BlobFacts, input: ArrayBuffer, output: ArrayBuffer | null): Promise<Verified> {
    const transfer = output === null ? [input] : [input, output];
    return this.thread.request({ ...facts, input, output, fault: null }, transfer);
  }
}

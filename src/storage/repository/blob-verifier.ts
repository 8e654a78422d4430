/**
 * Checking read blobs in a thread of its own, beside the thread that reads them: a restore or an
 * extract keeps both cores busy, one fetching chunks and writing files, the other decompressing
 * and hashing them (about half of the work each, on the bench volume). A blob's stored bytes and
 * the buffer to decompress into move to the checking thread and back (transferred, never
 * copied), to be used again for the next blob.
 */
import type { Worker } from 'node:worker_threads';
import { startThread, threadEntry } from '../../shared/thread.ts';

/** Why a blob failed its check. */
export type BlobFault = 'corrupt' | 'mismatch';

/** What the index says a blob is. */
export interface BlobFacts {
  id: string;
  compressed: boolean;
  /** Bytes of content. */
  raw: number;
  /** Bytes stored, at the start of the input buffer. */
  length: number;
}

/** A blob sent to be checked, and sent back: its buffers, and the fault found, if any. */
export interface VerifyMessage extends BlobFacts {
  seq: number;
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

/** A checking thread serving the thread that made it. */
export class BlobVerifier {
  private readonly thread: Worker;
  private readonly waiting = new Map<
    number,
    { resolve: (m: VerifyMessage) => void; reject: (e: Error) => void }
  >();
  private next = 0;
  private failure: Error | null = null;

  constructor() {
    this.thread = startThread(threadEntry(import.meta.url, './blob-verifier.thread'), null, {
      maxYoungGenerationSizeMb: 4,
    });
    this.thread.on('message', (reply: VerifyMessage) => {
      const waiter = this.waiting.get(reply.seq);
      this.waiting.delete(reply.seq);
      if (this.waiting.size === 0) this.thread.unref();
      waiter?.resolve(reply);
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    this.thread.on('error', fail);
    this.thread.on('exit', () => fail(new Error('the blob checking thread ended')));
    // Idle, the thread does not keep its owner's event loop alive; it ends with its owner. (After
    // the listeners: adding a 'message' listener refs the thread again.)
    this.thread.unref();
  }

  /**
   * Decompresses (into `output`, when compressed) and hashes the blob whose stored bytes start
   * `input`. Both buffers move to the thread until this resolves with them.
   */
  verify(facts: BlobFacts, input: ArrayBuffer, output: ArrayBuffer | null): Promise<Verified> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const seq = this.next++;
    const message: VerifyMessage = { ...facts, seq, input, output, fault: null };
    return new Promise<VerifyMessage>((resolve, reject) => {
      if (this.waiting.size === 0) this.thread.ref();
      this.waiting.set(seq, { resolve, reject });
      this.thread.postMessage(message, output === null ? [input] : [input, output]);
    });
  }
}

/**
 * Whether the calling thread answers requests: the main thread of a process, unless the process
 * said it answers none. Work that would hold such a thread up (a synchronous read, compression,
 * checking what was read) is sent to other threads or to libuv's pool; any other thread (and the
 * main thread of a process started for one piece of work) does it itself.
 */
import { isMainThread } from 'node:worker_threads';

let answersNone = false;

export function answersRequests(): boolean {
  return isMainThread && !answersNone;
}

/** Says that this process answers no request: its main thread may do the work itself. */
export function answerNoRequests(): void {
  answersNone = true;
}

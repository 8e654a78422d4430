import { parentPort, Worker, type ResourceLimits } from 'node:worker_threads';

/** How long a thread asked to stop may take to wind down before it is terminated. */
const STOP_GRACE_MS = 10_000;

/**
 * The message a thread entry posts last: its result, or why it failed. Anything posted before
 * it is progress, handed to `onMessage`.
 */
export type ThreadOutcome<R> = { done: true; result: R } | { done: true; error: ThreadError };

/**
 * An error as it crosses the thread boundary: its name, message and own fields of plain values
 * (an ArchiveError's `reason`, a system error's `code`), for `reviveError` to rebuild.
 */
export interface ThreadError {
  message: string;
  name: string;
  fields: Record<string, string | number | boolean>;
}

export interface ThreadOptions<M> {
  /** Each message the thread posts before its outcome. */
  onMessage?: (message: M) => void;
  /**
   * Aborting asks the thread to stop (its work sees its own signal abort), waits for it to end —
   * terminating it only if it has not within a grace period — and rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /**
   * Run once the thread has stopped, on every path out, told whether the work succeeded (e.g. to
   * remove what it was writing when it did not).
   */
  cleanUp?: (succeeded: boolean) => Promise<void>;
  /** Rebuilds the error the thread failed with (default: `reviveThreadError`). */
  reviveError?: (error: ThreadError) => Error;
  /** The thread's V8 heap limits (Node's defaults when absent). */
  resourceLimits?: ResourceLimits;
}

/**
 * Runs a module in a worker thread with `input` as its `workerData`, and resolves with the
 * result it posts. Work that walks trees, compresses or matches user patterns runs this way, so
 * that however long it takes it never holds up the event loop that answers HTTP.
 *
 * `entry` is the module's path beside the caller, without extension (`./archive.thread`): the
 * caller's own extension is used, so the same code runs from the TypeScript sources and from
 * the compiled build.
 */
export function runInThread<R, M = never>(
  callerUrl: string,
  entry: string,
  input: unknown,
  options: ThreadOptions<M> = {},
): Promise<R> {
  const { onMessage, signal, cleanUp, reviveError = reviveThreadError } = options;
  signal?.throwIfAborted();
  const thread = startThread(threadEntry(callerUrl, entry), input, options.resourceLimits);
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  const outcome = new Promise<R>((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', abort);
      finish();
    };
    const abort = () => {
      const reason: unknown = signal?.reason;
      settle(() => reject(reason instanceof Error ? reason : new Error('the work was stopped')));
      thread.postMessage({ stop: true });
    };
    signal?.addEventListener('abort', abort, { once: true });
    thread.on('message', (message: M | ThreadOutcome<R>) => {
      if (!isOutcome(message)) return onMessage?.(message);
      settle(() => ('error' in message ? reject(reviveError(message.error)) : resolve(message.result)));
    });
    thread.on('error', (error) => settle(() => reject(error)));
    thread.on('exit', (code) => settle(() => reject(new Error(`the worker thread exited (${code})`))));
  });
  // A thread is let end by itself: terminating one mid-way through native work (a zlib stream)
  // can bring the whole process down. Only a thread that does not end in time is terminated.
  const stop = async (succeeded: boolean): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_GRACE_MS)));
    if ((await Promise.race([exited, late])) === 'late') await thread.terminate();
    clearTimeout(timer);
    await cleanUp?.(succeeded);
  };
  return outcome.then(
    async (result) => {
      await stop(true);
      return result;
    },
    async (err: unknown) => {
      await stop(false);
      throw err;
    },
  );
}

/**
 * A plain Error with the message, name and fields the thread's error had: a system error keeps
 * its `code`, so that the caller can tell a network failure from any other.
 */
export function reviveThreadError(error: ThreadError): Error {
  const revived = Object.assign(new Error(error.message), error.fields);
  revived.name = error.name;
  return revived;
}

/**
 * The URL of a thread entry module beside the caller, with the caller's own extension, so the
 * same code runs from the TypeScript sources and from the compiled build.
 */
export function threadEntry(callerUrl: string, entry: string): URL {
  return new URL(`${entry}${callerUrl.endsWith('.ts') ? '.ts' : '.js'}`, callerUrl);
}

function isOutcome<R>(message: unknown): message is ThreadOutcome<R> {
  return typeof message === 'object' && message !== null && (message as { done?: unknown }).done === true;
}

/**
 * Starts the module at `entry` (a URL with its extension; see `threadEntry`) in a worker thread.
 * From the TypeScript sources (development, tests) the thread must load TypeScript too: it
 * starts from a one-line module that registers the same loader the process uses, then imports
 * the entry.
 */
export function startThread(entry: URL, input: unknown, resourceLimits: ResourceLimits = {}): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, { workerData: input, resourceLimits });
  const loader = import.meta.resolve('tsx/esm/api');
  const boot = [
    `import { register } from ${JSON.stringify(loader)};`,
    'register();',
    `await import(${JSON.stringify(entry.href)});`,
  ].join('\n');
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), {
    workerData: input,
    resourceLimits,
  });
}

/**
 * In a thread entry: runs `work` with a signal that aborts when the parent asks the thread to
 * stop and a way to post progress, then posts its outcome (the last message the parent reads)
 * and lets the thread end.
 */
export function runThreadWork<R, M = never>(
  work: (signal: AbortSignal, post: (progress: M) => void) => Promise<R>,
): void {
  const port = parentPort;
  if (port === null) throw new Error('runThreadWork runs in a worker thread');
  const stop = new AbortController();
  port.on('message', (message: { stop?: boolean }) => {
    if (message.stop === true) stop.abort(new Error('the work was stopped'));
  });
  const finish = (outcome: ThreadOutcome<R>) => {
    port.postMessage(outcome);
    port.close();
  };
  work(stop.signal, (progress) => port.postMessage(progress)).then(
    (result) => finish({ done: true, result }),
    (error: unknown) => finish({ done: true, error: toThreadError(error) }),
  );
}

function toThreadError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { message: String(error), name: 'Error', fields: {} };
  const fields: ThreadError['fields'] = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      fields[key] = value;
  }
  return { message: error.message, name: error.name, fields };
}

/**
 * A thread that answers requests, each reply carrying the number of its request (`id`): a
 * helper beside the thread that made it (a snapshot's compressor, a restore's chunk checker).
 * Requests are sent with the buffers they move (transferred, not copied); each resolves with its
 * reply, or rejects once the thread fails or ends. With `idleUnref`, the thread keeps its
 * owner's event loop alive only while a request waits (it ends with its owner).
 */
export class ServingThread<Req extends { id: number }, Rep extends { id: number }> {
  private readonly thread: Worker;
  private readonly waiting = new Map<number, { resolve: (reply: Rep) => void; reject: (e: Error) => void }>();
  private next = 0;
  private failure: Error | null = null;

  constructor(
    entry: URL,
    name: string,
    private readonly idleUnref = false,
  ) {
    this.thread = startThread(entry, null, { maxYoungGenerationSizeMb: 4 });
    this.thread.on('message', (reply: Rep) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (this.idleUnref && this.waiting.size === 0) this.thread.unref();
      waiter?.resolve(reply);
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    this.thread.on('error', fail);
    this.thread.on('exit', () => fail(new Error(`the ${name} thread ended`)));
    // After the listeners: adding a 'message' listener refs the thread again.
    if (idleUnref) this.thread.unref();
  }

  /** Sends `request` (its `id` set here), moving `transfer` to the thread; resolves with the reply. */
  request(request: Omit<Req, 'id'>, transfer: ArrayBuffer[]): Promise<Rep> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const message = { ...request, id: this.next++ } as Req;
    return new Promise<Rep>((resolve, reject) => {
      if (this.idleUnref && this.waiting.size === 0) this.thread.ref();
      this.waiting.set(message.id, { resolve, reject });
      this.thread.postMessage(message, transfer);
    });
  }

  /** Ends the thread now (no reply still awaited is answered). */
  async close(): Promise<void> {
    this.thread.removeAllListeners('exit');
    await this.thread.terminate();
  }
}

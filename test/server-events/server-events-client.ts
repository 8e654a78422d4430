/**
 * A client of `GET /api/client/servers/{server}/events` over a real socket, as a browser's
 * EventSource reads it: the response's status and headers, then every event (`event:` and
 * `data:` lines, the data parsed as JSON) and comment as they arrive. Tests wait for events with
 * a timeout; nothing here sleeps.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { startTestApp, type TestApp } from '../support/harness.ts';

/** A test app with `env`, listening on a port of 127.0.0.1 for the streams. */
export async function startListening(env: Record<string, string>): Promise<{ app: TestApp; port: number }> {
  const app = await startTestApp({ env });
  await app.http.listen({ host: '127.0.0.1', port: 0 });
  const address = app.http.server.address();
  return { app, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

/** A backup's `progress`, as the stream sends it. */
export interface ProgressData {
  operation: 'backup' | 'restore';
  phase: string;
  bytes_done: number;
  bytes_total: number | null;
  files_done: number;
  files_total: number | null;
  started_at: string;
  updated_at: string;
}

/** An event's data: the fields the tests read by name, as the stream may send them. */
export interface EventData {
  [field: string]: unknown;
  status?: string | null;
  backup?: string;
  uuid?: string;
  /** `backup.progress`, `backup.updated`: the progress; `snapshot`: each running operation's. */
  progress?: ProgressData | null | { backup: string; progress: ProgressData }[];
}

export interface StreamEvent {
  event: string;
  data: EventData;
  /** When it arrived (performance.now()). */
  at: number;
}

/** The progress a `backup.progress` or `backup.updated` event carries. */
export function progressIn(event: StreamEvent): ProgressData | null {
  const { progress } = event.data;
  if (Array.isArray(progress)) throw new Error(`${event.event} carries a list of progress`);
  return progress ?? null;
}

export interface EventStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The whole body when the answer is not a stream (an error envelope). */
  body(): Promise<string>;
  /** Every event so far, in order. */
  events: StreamEvent[];
  /** Comments (`: keep-alive`) so far. */
  comments: string[];
  /**
   * The first event that `match` accepts and that no call has returned yet, waiting for it if
   * need be: each event is returned at most once, and events of another kind stay to be asked
   * for. Rejects after `timeoutMs`, or when the stream ends first.
   */
  next(match?: (event: StreamEvent) => boolean, timeoutMs?: number, what?: string): Promise<StreamEvent>;
  /** Resolves when the server ends the stream (or the connection closes). */
  ended: Promise<void>;
  /** Hangs up, as a closed browser tab does. */
  close(): void;
}

export function openEventStream(
  port: number,
  server: string,
  headers: Record<string, string>,
): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: '127.0.0.1', port, path: `/api/client/servers/${server}/events`, headers },
      (response: IncomingMessage) => resolve(wrap(response, () => request.destroy())),
    );
    request.once('error', reject);
  });
}

function wrap(response: IncomingMessage, hangUp: () => void): EventStream {
  const events: StreamEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const taken = new Set<number>();
  let finished = false;
  let text = '';
  let raw = '';
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    raw += chunk;
    text += chunk;
    let end: number;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim());
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length > 0)
        events.push({ event, data: JSON.parse(data.join('\n')) as EventData, at: performance.now() });
    }
    wake();
  });
  const ended = new Promise<void>((resolve) => {
    const done = () => {
      finished = true;
      wake();
      resolve();
    };
    response.once('end', done);
    response.once('close', done);
    response.once('error', done);
  });
  return {
    status: response.statusCode ?? 0,
    headers: response.headers,
    body: () => ended.then(() => raw),
    events,
    comments,
    ended,
    close: hangUp,
    next(match = () => true, timeoutMs = 30_000, what = 'an event') {
      return new Promise((resolve, reject) => {
        const look = () => {
          const index = events.findIndex((event, i) => !taken.has(i) && match(event));
          if (index >= 0) {
            taken.add(index);
            return finish(() => resolve(events[index]!));
          }
          if (finished)
            finish(() => reject(new Error(`the stream ended before ${what}; got ${describe(events)}`)));
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`no ${what} within ${timeoutMs} ms; got ${describe(events)}`))),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(look);
          settle();
        };
        waiters.add(look);
        look();
      });
    },
  };
}

function describe(events: StreamEvent[]): string {
  return events
    .slice(-12)
    .map((e) => `${e.event} ${JSON.stringify(e.data).slice(0, 160)}`)
    .join(' | ');
}

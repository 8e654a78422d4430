import { PassThrough, type Readable } from 'node:stream';
import { AppError, ServiceUnavailableError, TooManyRequestsError } from '../shared/errors.ts';
import type {
  ServerEvent,
  ServerEventsService,
  ServerSnapshot,
  ServerWatch,
} from './server-events.service.ts';

/** A client that lets this much go unread is too slow to follow: its stream is ended. */
const MAX_UNREAD_BYTES = 1024 * 1024;

export class TooManyStreamsError extends TooManyRequestsError {
  constructor(limit: number) {
    super(5);
    this.message = `At most ${limit} event streams may be open at once; close one first.`;
  }
}

export interface EventStreamsOptions {
  /** How many streams one user may hold open at once in this process. */
  perUser: number;
  /** How often every stream gets a keep-alive comment and has its credential checked again. */
  keepAliveMs: number;
  logger: { warn(details: object, message: string): void };
}

export interface StreamRequest {
  userId: string;
  serverId: string;
  /**
   * What the stream was allowed on: its credential and its view of the server. Streams of the
   * same server with the same `checkKey` are checked once per keep-alive, for all of them.
   */
  checkKey: string;
  /**
   * Whether the stream's credential still authenticates its user with the same view of the
   * server. Throwing an `AppError` (401, 403, 404) means no, as a new request would be refused;
   * any other failure is logged and the stream stays open.
   */
  recheck(): Promise<boolean>;
  /** Called as the stream is ended with its connection to be closed, before its body ends. */
  onHangUp?(): void;
}

export interface EventStream {
  /** The stream's text, for its client. */
  readonly body: Readable;
  /** Whether the stream is still held (not ended, its place not given back). */
  readonly open: boolean;
  /** Sends one event; a client too far behind has its stream ended instead. */
  send(event: string, data: unknown): void;
  /** Ends the stream (with `hangUp`, its connection is to be closed too). */
  end(hangUp?: boolean): void;
  /**
   * Starts watching the stream's server: `listener` hears its events until the stream ends, and
   * `opened` is given where the server stands first; keep-alives and checks run from then on.
   * If the watch cannot start, the stream's place is given back and the error thrown; if the
   * stream was ended meanwhile (the client left, or the process is stopping), 503.
   */
  watch(
    events: Pick<ServerEventsService, 'watch'>,
    listener: (event: ServerEvent) => void,
    opened: (snapshot: ServerSnapshot) => void,
  ): Promise<void>;
}

class OpenStream implements EventStream {
  readonly out = new PassThrough();
  private watching: ServerWatch | undefined;

  constructor(
    private readonly streams: EventStreams,
    readonly request: StreamRequest,
  ) {}

  get body(): Readable {
    return this.out;
  }

  get open(): boolean {
    return this.streams.holds(this);
  }

  send(event: string, data: unknown): void {
    if (this.out.writableLength > MAX_UNREAD_BYTES) return this.end(true);
    this.out.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(hangUp = false): void {
    this.streams.release(this);
    this.watching?.stop();
    if (hangUp) this.request.onHangUp?.();
    this.out.end();
  }

  async watch(
    events: Pick<ServerEventsService, 'watch'>,
    listener: (event: ServerEvent) => void,
    opened: (snapshot: ServerSnapshot) => void,
  ): Promise<void> {
    let watch: ServerWatch;
    try {
      watch = await events.watch(this.request.serverId, listener);
    } catch (error) {
      this.streams.release(this);
      throw error;
    }
    if (!this.open) {
      watch.stop();
      throw new ServiceUnavailableError('Aerie is shutting down; try again in a moment.');
    }
    this.watching = watch;
    opened(watch.snapshot);
    this.streams.startTicking();
  }
}

/**
 * The event streams open in this process: at most `perUser` per user, a keep-alive comment on
 * each every period, and at each keep-alive the credential and access each was opened with
 * checked again (once per credential and server, however many streams share them); a stream
 * that fails its check is ended, its connection closed.
 */
export class EventStreams {
  private readonly streams = new Set<OpenStream>();
  private readonly perUserCount = new Map<string, number>();
  private ticker: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly options: EventStreamsOptions) {}

  /** Takes a place for a stream; past the user's limit, throws `TooManyStreamsError` (429). */
  open(request: StreamRequest): EventStream {
    const { perUser } = this.options;
    const count = this.perUserCount.get(request.userId) ?? 0;
    if (count >= perUser) throw new TooManyStreamsError(perUser);
    this.perUserCount.set(request.userId, count + 1);
    const stream = new OpenStream(this, request);
    this.streams.add(stream);
    return stream;
  }

  /** Ends every stream, closing its connection, so that shutting down waits for no client. */
  close(): void {
    for (const stream of [...this.streams]) stream.end(true);
    this.stopTicking();
  }

  /** Whether the stream still holds its place. */
  holds(stream: OpenStream): boolean {
    return this.streams.has(stream);
  }

  /** Gives the stream's place back (once; again does nothing). */
  release(stream: OpenStream): void {
    if (!this.streams.delete(stream)) return;
    const { userId } = stream.request;
    const left = (this.perUserCount.get(userId) ?? 1) - 1;
    if (left > 0) this.perUserCount.set(userId, left);
    else this.perUserCount.delete(userId);
    if (this.streams.size === 0) this.stopTicking();
  }

  /** Keep-alives and checks run from now on, if they did not already. */
  startTicking(): void {
    this.ticker ??= setInterval(() => void this.tick(), this.options.keepAliveMs);
  }

  private stopTicking(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  /** Keep-alives, then one check per credential and server, however many streams share them. */
  private async tick(): Promise<void> {
    for (const stream of this.streams) stream.out.write(': keep-alive\n\n');
    if (this.checking) return;
    this.checking = true;
    try {
      const groups = new Map<string, OpenStream[]>();
      for (const stream of this.streams) {
        const key = JSON.stringify([stream.request.serverId, stream.request.checkKey]);
        groups.set(key, [...(groups.get(key) ?? []), stream]);
      }
      for (const group of groups.values()) {
        const live = group.filter((stream) => this.streams.has(stream));
        if (live[0] !== undefined && !(await this.stillAllowed(live[0])))
          for (const stream of live) stream.end(true);
      }
    } finally {
      this.checking = false;
    }
  }

  private async stillAllowed(stream: OpenStream): Promise<boolean> {
    try {
      return await stream.request.recheck();
    } catch (error) {
      if (error instanceof AppError) return false; // refused as a request would be
      this.options.logger.warn({ err: error }, 'could not check an event stream’s credential; it stays open');
      return true;
    }
  }
}

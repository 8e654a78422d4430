import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { PassThrough } from 'node:stream';
import type { ServerEvent, ServerWatch } from '../../server-events/server-events.service.ts';
import { toBackupResource, toProgressResource } from '../../backups/backup.transform.ts';
import type { Config } from '../../config.ts';
import type { ServerAccess } from '../../servers/server-access.ts';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import type { Services } from '../../services.ts';
import { AppError, ServiceUnavailableError, TooManyRequestsError } from '../../shared/errors.ts';
import type { Actor } from '../../users/actor.ts';
import { readCookie, SESSION_COOKIE } from '../authenticate.ts';
import { authenticatedContextOf, contextOf } from '../request-context.ts';
import { accessOf, serverAccess } from '../server-guard.ts';

/** A client that lets this much go unread is too slow to follow: its stream is ended. */
const MAX_UNREAD_BYTES = 1024 * 1024;

type Deps = Pick<Services, 'serverEvents' | 'access' | 'apiKeys' | 'sessions'>;

/** The credential a stream was opened with, to check again while it stays open. */
interface Credential {
  kind: 'key' | 'session';
  token: string;
  context: ReturnType<typeof contextOf>;
}

interface OpenStream {
  userId: string;
  serverId: string;
  credential: Credential;
  readsBackups: boolean;
  out: PassThrough;
  /** Ends the stream (the response is finished; with `hangUp`, the connection is closed too). */
  end(hangUp?: boolean): void;
}

class TooManyStreamsError extends TooManyRequestsError {
  constructor(limit: number) {
    super(5);
    this.message = `At most ${limit} event streams may be open at once; close one first.`;
  }
}

/**
 * `GET /api/client/servers/{server}/events`: a server's events as they happen, as
 * server-sent events. A snapshot first (the server's status, what runs on its backups), then
 * `server.status`, `backup.progress`, `backup.updated` and `backup.deleted`, and a `: keep-alive`
 * comment every keep-alive period. Whoever may see the server may open one; backup events go
 * only to those who may read its backups (`backup.read`), the others get status events only.
 * A user holds at most `perUser` streams at once in this process (429 past that). At every
 * keep-alive the stream's credential and access are checked again, as a new request's would be:
 * a key deleted, a session ended or expired, access lost, ends the stream.
 */
export function serverEventRoutes(
  app: FastifyInstance,
  { serverEvents, access, apiKeys, sessions }: Deps,
  { perUser, keepAliveMs }: Config['eventStreams'],
): void {
  const streams = new Set<OpenStream>();
  const perUserCount = new Map<string, number>();
  let ticker: NodeJS.Timeout | undefined;
  let checking = false;

  const release = (stream: OpenStream) => {
    if (!streams.delete(stream)) return;
    const left = (perUserCount.get(stream.userId) ?? 1) - 1;
    if (left > 0) perUserCount.set(stream.userId, left);
    else perUserCount.delete(stream.userId);
    if (streams.size === 0) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };

  /** Whether the stream's credential still authenticates its user with the same view of the server. */
  const stillAllowed = async (stream: OpenStream): Promise<boolean> => {
    const { kind, token, context } = stream.credential;
    try {
      const actor: Actor =
        kind === 'key' ? await apiKeys.authenticate(token, context) : await sessions.authenticate(token);
      if (actor.user.id !== stream.userId) return false;
      return readsBackups(await access.resolve(actor, stream.serverId)) === stream.readsBackups;
    } catch (error) {
      if (error instanceof AppError) return false; // 401, 403, 404: refused as a request would be
      app.log.warn({ err: error }, 'could not check an event stream’s credential; it stays open');
      return true;
    }
  };

  /** Keep-alives, then one check per credential and server, however many streams share them. */
  const tick = async () => {
    for (const stream of streams) stream.out.write(': keep-alive\n\n');
    if (checking) return;
    checking = true;
    try {
      const groups = new Map<string, OpenStream[]>();
      for (const stream of streams) {
        const key = `${stream.credential.kind}:${stream.credential.token}:${stream.serverId}:${stream.readsBackups}`;
        groups.set(key, [...(groups.get(key) ?? []), stream]);
      }
      for (const group of groups.values()) {
        const live = group.filter((stream) => streams.has(stream));
        if (live[0] !== undefined && !(await stillAllowed(live[0])))
          for (const stream of live) stream.end(true);
      }
    } finally {
      checking = false;
    }
  };

  // On shutdown every stream ends, so that closing waits for no client.
  app.addHook('preClose', (done) => {
    for (const stream of [...streams]) stream.end(true);
    done();
  });
  app.addHook('onClose', async () => {
    await serverEvents.close();
  });

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/client/servers/:server/events',
    {
      schema: {
        tags: ['servers'],
        summary:
          'The server’s events as server-sent events (text/event-stream): snapshot, server.status, backup.progress, backup.updated, backup.deleted',
        security: [{ bearerAuth: [] }],
        params: ServerParamsSchema,
      },
      preValidation: serverAccess(access),
    },
    async (request, reply) => {
      const serverAccessed = accessOf(request);
      const userId = authenticatedContextOf(request).actor.user.id;
      const open = perUserCount.get(userId) ?? 0;
      if (open >= perUser) throw new TooManyStreamsError(perUser);
      perUserCount.set(userId, open + 1);

      const out = new PassThrough();
      let watch: ServerWatch | undefined;
      const stream: OpenStream = {
        userId,
        serverId: serverAccessed.server.id,
        credential: credentialOf(request),
        readsBackups: readsBackups(serverAccessed),
        out,
        end: (hangUp = false) => {
          release(stream);
          watch?.stop();
          if (hangUp) reply.raw.once('finish', () => reply.raw.socket?.destroySoon());
          out.end();
        },
      };
      streams.add(stream);
      // The client hanging up (even while the stream is being opened) ends it.
      reply.raw.once('close', () => stream.end());
      try {
        watch = await serverEvents.watch(stream.serverId, (event) => send(stream, event));
      } catch (error) {
        release(stream);
        throw error;
      }
      if (!streams.has(stream)) {
        watch.stop(); // ended while it was being opened: the client left, or the process is stopping
        throw new ServiceUnavailableError('Aerie is shutting down; try again in a moment.');
      }
      const { status, running } = watch.snapshot;
      write(stream, 'snapshot', {
        status,
        progress: stream.readsBackups
          ? running.map(({ backup, progress }) => ({ backup, progress: toProgressResource(progress) }))
          : [],
      });
      ticker ??= setInterval(() => void tick(), keepAliveMs);
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('x-accel-buffering', 'no')
        .send(out);
    },
  );
}

function readsBackups(access: ServerAccess): boolean {
  return access.permissions === 'all' || access.permissions.includes('backup.read');
}

/** The credential the authentication hook accepted: the bearer token, else the session cookie. */
function credentialOf(request: FastifyRequest): Credential {
  const bearer = /^bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  return bearer !== undefined
    ? { kind: 'key', token: bearer, context: contextOf(request) }
    : { kind: 'session', token: readCookie(request, SESSION_COOKIE) ?? '', context: contextOf(request) };
}

function send(stream: OpenStream, event: ServerEvent): void {
  if (event.type === 'server.gone') return stream.end(true);
  if (event.type === 'server.status') return write(stream, event.type, { status: event.status });
  if (!stream.readsBackups) return;
  if (event.type === 'backup.progress')
    return write(stream, event.type, { backup: event.backup, progress: toProgressResource(event.progress) });
  if (event.type === 'backup.updated')
    return write(stream, event.type, toBackupResource(event.backup).attributes);
  write(stream, event.type, { backup: event.backup });
}

function write(stream: OpenStream, event: string, data: unknown): void {
  if (stream.out.writableLength > MAX_UNREAD_BYTES) return stream.end(true);
  stream.out.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { EventStreams, type EventStream } from '../../server-events/event-streams.ts';
import type { ServerEvent } from '../../server-events/server-events.service.ts';
import { toBackupResource, toProgressResource } from '../../backups/backup.transform.ts';
import type { Config } from '../../config.ts';
import type { ServerAccess } from '../../servers/server-access.ts';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import type { Services } from '../../services.ts';
import { authenticateCredential, credentialOf } from '../authenticate.ts';
import { clientSchema } from '../client-route.ts';
import { authenticatedContextOf, contextOf } from '../request-context.ts';
import { accessOf, serverAccess } from '../server-guard.ts';

type Deps = Pick<Services, 'serverEvents' | 'access' | 'apiKeys' | 'sessions'>;

/**
 * `GET /api/client/servers/{server}/events`: a server's events as they happen, as
 * server-sent events. A snapshot first (the server's status, what runs on its backups), then
 * `server.status`, `backup.progress`, `backup.updated` and `backup.deleted`, and a `: keep-alive`
 * comment every keep-alive period. Whoever may see the server may open one; backup events go
 * only to those who may read its backups (`backup.read`), the others get status events only.
 * At most `perUser` streams per user (429 past that); a stream whose credential or access no
 * longer holds at a keep-alive is ended (see `EventStreams`).
 */
export function serverEventRoutes(
  app: FastifyInstance,
  { serverEvents, access, apiKeys, sessions }: Deps,
  { perUser, keepAliveMs }: Config['eventStreams'],
): void {
  const streams = new EventStreams({ perUser, keepAliveMs, logger: app.log });
  // On shutdown every stream ends, so that closing waits for no client.
  app.addHook('preClose', (done) => {
    streams.close();
    done();
  });
  app.addHook('onClose', async () => serverEvents.close());

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/client/servers/:server/events',
    {
      schema: clientSchema(
        'servers',
        'The server’s events as server-sent events (text/event-stream): snapshot, server.status, backup.progress, backup.updated, backup.deleted',
        { params: ServerParamsSchema },
      ),
      preValidation: serverAccess(access),
    },
    async (request, reply) => {
      const userId = authenticatedContextOf(request).actor.user.id;
      const serverId = accessOf(request).server.id;
      const backups = readsBackups(accessOf(request));
      const credential = credentialOf(request) ?? { kind: 'session', token: '' }; // as authenticated
      const stream = streams.open({
        userId,
        serverId,
        checkKey: `${credential.kind}:${credential.token}:${backups}`,
        recheck: async () => {
          const actor = await authenticateCredential({ apiKeys, sessions }, credential, contextOf(request));
          return actor.user.id === userId && readsBackups(await access.resolve(actor, serverId)) === backups;
        },
        onHangUp: () => reply.raw.once('finish', () => reply.raw.socket?.destroySoon()),
      });
      // The client hanging up (even while the stream is being opened) ends it.
      reply.raw.once('close', () => stream.end());
      await stream.watch(
        serverEvents,
        (event) => send(stream, backups, event),
        ({ status, running }) =>
          stream.send('snapshot', { status, progress: backups ? running.map(progressOf) : [] }),
      );
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('x-accel-buffering', 'no')
        .send(stream.body);
    },
  );
}

function readsBackups(access: ServerAccess): boolean {
  return access.permissions === 'all' || access.permissions.includes('backup.read');
}

/** What runs on a backup, as sent. */
function progressOf({ backup, progress }: Omit<Extract<ServerEvent, { type: 'backup.progress' }>, 'type'>) {
  return { backup, progress: toProgressResource(progress) };
}

function send(stream: EventStream, readsBackups: boolean, event: ServerEvent): void {
  if (event.type === 'server.gone') return stream.end(true);
  if (event.type === 'server.status') return stream.send(event.type, { status: event.status });
  if (!readsBackups) return;
  if (event.type === 'backup.progress') return stream.send(event.type, progressOf(event));
  if (event.type === 'backup.updated')
    return stream.send(event.type, toBackupResource(event.backup).attributes);
  stream.send(event.type, { backup: event.backup });
}

import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ActivityListSchema, ActivityQuerySchema } from '../../activity/activity.schema.ts';
import { toActivityLogResource, viewerOf } from '../../activity/activity.transform.ts';
import {
  AccountSchema,
  ServerListQuerySchema,
  ServerListSchema,
  ServerParamsSchema,
  ServerResourceSchema,
} from '../../servers/server.schema.ts';
import { toAccount, toServerResource } from '../../servers/server.transform.ts';
import type { Services } from '../../services.ts';
import { clientSchema } from '../client-route.ts';
import { listEnvelope } from '../pagination.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { accessOf, can, serverAccess } from '../server-guard.ts';

export function serverRoutes(
  app: FastifyInstance,
  { serverQueries, activity, access }: Pick<Services, 'serverQueries' | 'activity' | 'access'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.get(
    '/api/client',
    {
      schema: clientSchema(
        'servers',
        'The servers the caller owns or is a subuser of (administrators: ?type=admin for all)',
        { querystring: ServerListQuerySchema, response: { 200: ServerListSchema } },
      ),
    },
    async (request) => {
      const { actor } = authenticatedContextOf(request);
      const page = await serverQueries.list(actor, request.query);
      return listEnvelope(request, page, (listed) => toServerResource(listed, actor.user));
    },
  );

  typed.get(
    '/api/client/servers/:server',
    {
      schema: clientSchema(
        'servers',
        'One server, with its status (watch it return to null after a restore)',
        { params: ServerParamsSchema, response: { 200: ServerResourceSchema } },
      ),
      preValidation: serverAccess(access),
    },
    async (request) => {
      const listed = await serverQueries.describe(accessOf(request));
      return toServerResource(listed, authenticatedContextOf(request).actor.user);
    },
  );

  typed.get(
    '/api/client/servers/:server/activity',
    {
      schema: clientSchema('activity', "The server's activity feed (subusers need activity.read)", {
        params: ServerParamsSchema,
        querystring: ActivityQuerySchema,
        response: { 200: ActivityListSchema },
      }),
      preValidation: serverAccess(access, can('activity.read')),
    },
    async (request) => {
      const { actor } = authenticatedContextOf(request);
      const subject = { type: 'server' as const, id: accessOf(request).server.id };
      const page = await activity.list(actor, subject, request.query);
      return listEnvelope(request, page, (row) => toActivityLogResource(row, viewerOf(actor)));
    },
  );

  typed.get(
    '/api/client/account',
    {
      schema: clientSchema('account', "The caller's account", { response: { 200: AccountSchema } }),
    },
    (request) => toAccount(authenticatedContextOf(request).actor.user),
  );
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ActivityListSchema, ActivityQuerySchema } from '../../activity/activity.schema.ts';
import { ServerParamsSchema } from '../../backups/backup.schema.ts';
import {
  AccountSchema,
  ServerListQuerySchema,
  ServerListSchema,
  ServerResourceSchema,
} from '../../servers/server.schema.ts';
import { toAccount } from '../../servers/server-query.service.ts';
import type { Services } from '../../services.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { authenticatedContextOf, pageUrlOf } from '../request-context.ts';

/** A path segment too long to be any server names nothing: 404. A bad query stays a 422. */
function assertValid(request: FastifyRequest): void {
  const error = request.validationError;
  if (error === undefined) return;
  if (error.validationContext === 'params') throw new NotFoundError();
  throw error;
}

export function serverRoutes(app: FastifyInstance, { serverQueries }: Pick<Services, 'serverQueries'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];

  typed.get(
    '/api/client',
    {
      schema: {
        tags: ['servers'],
        summary: 'The servers the caller owns or is a subuser of (administrators: ?type=admin for all)',
        security,
        querystring: ServerListQuerySchema,
        response: { 200: ServerListSchema },
      },
    },
    (request) => serverQueries.list(authenticatedContextOf(request).actor, request.query, pageUrlOf(request)),
  );

  typed.get(
    '/api/client/servers/:server',
    {
      schema: {
        tags: ['servers'],
        summary: 'One server, with its status (watch it return to null after a restore)',
        security,
        params: ServerParamsSchema,
        response: { 200: ServerResourceSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverQueries.get(authenticatedContextOf(request).actor, request.params.server);
    },
  );

  typed.get(
    '/api/client/servers/:server/activity',
    {
      schema: {
        tags: ['activity'],
        summary: "The server's activity feed (subusers need activity.read)",
        security,
        params: ServerParamsSchema,
        querystring: ActivityQuerySchema,
        response: { 200: ActivityListSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverQueries.activityFeed(
        authenticatedContextOf(request).actor,
        request.params.server,
        request.query,
        pageUrlOf(request),
      );
    },
  );

  typed.get(
    '/api/client/account',
    {
      schema: {
        tags: ['account'],
        summary: "The caller's account",
        security,
        response: { 200: AccountSchema },
      },
    },
    (request) => toAccount(authenticatedContextOf(request).actor.user),
  );
}

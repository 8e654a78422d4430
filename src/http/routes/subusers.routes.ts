import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import {
  CreateSubuserBodySchema,
  SubuserListSchema,
  SubuserParamsSchema,
  SubuserResourceSchema,
  UpdateSubuserBodySchema,
} from '../../servers/subuser.schema.ts';
import { toSubuserResource } from '../../servers/subuser.transform.ts';
import type { Services } from '../../services.ts';
import { clientSchema, noContent } from '../client-route.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { accessOf, can, notOwnEntry, serverAccess, subuserOf, subuserOfRequest } from '../server-guard.ts';

/**
 * Who else may use a server. Each route checks, in order: the server (404), the caller's
 * `user.*` permission (403), the subuser the path names (404), that it is not the caller's own
 * entry (403); then the body (422), then what the body asks for (403, 422, 400).
 */
export function subuserRoutes(
  app: FastifyInstance,
  { subusers, access }: Pick<Services, 'subusers' | 'access'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const subuser = subuserOf((serverId, reference) => subusers.find(serverId, reference));
  const tag = 'subusers';

  typed.get(
    '/api/client/servers/:server/users',
    {
      schema: clientSchema(tag, "The server's subusers (subusers need user.read)", {
        params: ServerParamsSchema,
        response: { 200: SubuserListSchema },
      }),
      preValidation: serverAccess(access, can('user.read')),
    },
    async (request) => ({
      object: 'list' as const,
      data: (await subusers.list(accessOf(request))).map(toSubuserResource),
    }),
  );

  typed.post(
    '/api/client/servers/:server/users',
    {
      schema: clientSchema(tag, 'Add an existing user, by email, as a subuser (needs user.create)', {
        params: ServerParamsSchema,
        body: CreateSubuserBodySchema,
        response: { 200: SubuserResourceSchema },
      }),
      preValidation: serverAccess(access, can('user.create')),
    },
    async (request) =>
      toSubuserResource(
        await subusers.create(authenticatedContextOf(request), accessOf(request), request.body),
      ),
  );

  typed.get(
    '/api/client/servers/:server/users/:user',
    {
      schema: clientSchema(tag, 'One subuser, by their user UUID (needs user.read)', {
        params: SubuserParamsSchema,
        response: { 200: SubuserResourceSchema },
      }),
      preValidation: serverAccess(access, can('user.read'), subuser),
    },
    (request) => toSubuserResource(subuserOfRequest(request)),
  );

  typed.post(
    '/api/client/servers/:server/users/:user',
    {
      schema: clientSchema(tag, "Replace a subuser's permissions (needs user.update; not one's own entry)", {
        params: SubuserParamsSchema,
        body: UpdateSubuserBodySchema,
        response: { 200: SubuserResourceSchema },
      }),
      preValidation: serverAccess(access, can('user.update'), subuser, notOwnEntry),
    },
    async (request) =>
      toSubuserResource(
        await subusers.update(
          authenticatedContextOf(request),
          accessOf(request),
          subuserOfRequest(request),
          request.body,
        ),
      ),
  );

  typed.delete(
    '/api/client/servers/:server/users/:user',
    {
      schema: clientSchema(tag, "Remove a subuser from the server (needs user.delete; not one's own entry)", {
        params: SubuserParamsSchema,
        response: { 204: { type: 'null', description: 'The subuser is removed.' } },
      }),
      preValidation: serverAccess(access, can('user.delete'), subuser, notOwnEntry),
    },
    (request, reply) =>
      noContent(reply, subusers.delete(authenticatedContextOf(request), subuserOfRequest(request))),
  );
}

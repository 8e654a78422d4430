import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ServerParamsSchema } from '../../backups/backup.schema.ts';
import {
  CreateSubuserBodySchema,
  SubuserListSchema,
  SubuserParamsSchema,
  SubuserResourceSchema,
  UpdateSubuserBodySchema,
} from '../../servers/subuser.schema.ts';
import type { Services } from '../../services.ts';
import { NotFoundError, type FieldError } from '../../shared/errors.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { toFieldErrors } from '../validation.ts';

/** A path segment too long to be any identifier names nothing: 404, not 422. */
function assertPathNamesSomething(request: FastifyRequest): void {
  if (request.validationError?.validationContext === 'params') throw new NotFoundError();
}

/**
 * The body's validation failures, handed to the service so that it reports them after visibility
 * (404) and permission (403), in the order the rest of the API promises.
 */
function bodyErrorsOf(request: FastifyRequest): FieldError[] | null {
  assertPathNamesSomething(request);
  const error = request.validationError;
  return error?.validation ? toFieldErrors(error.validation as never) : null;
}

export function subuserRoutes(app: FastifyInstance, { subusers }: Pick<Services, 'subusers'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const security = [{ bearerAuth: [] }];
  const tags = ['subusers'];

  typed.get(
    '/api/client/servers/:server/users',
    {
      schema: {
        tags,
        summary: "The server's subusers (subusers need user.read)",
        security,
        params: ServerParamsSchema,
        response: { 200: SubuserListSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertPathNamesSomething(request);
      return subusers.list(authenticatedContextOf(request).actor, request.params.server);
    },
  );

  typed.post(
    '/api/client/servers/:server/users',
    {
      schema: {
        tags,
        summary: 'Add an existing user, by email, as a subuser (needs user.create)',
        security,
        params: ServerParamsSchema,
        body: CreateSubuserBodySchema,
        response: { 200: SubuserResourceSchema },
      },
      attachValidation: true,
    },
    (request) =>
      subusers.create(
        authenticatedContextOf(request),
        request.params.server,
        request.body,
        bodyErrorsOf(request),
      ),
  );

  typed.get(
    '/api/client/servers/:server/users/:user',
    {
      schema: {
        tags,
        summary: 'One subuser, by their user UUID (needs user.read)',
        security,
        params: SubuserParamsSchema,
        response: { 200: SubuserResourceSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertPathNamesSomething(request);
      return subusers.get(authenticatedContextOf(request).actor, request.params);
    },
  );

  typed.post(
    '/api/client/servers/:server/users/:user',
    {
      schema: {
        tags,
        summary: "Replace a subuser's permissions (needs user.update; not one's own entry)",
        security,
        params: SubuserParamsSchema,
        body: UpdateSubuserBodySchema,
        response: { 200: SubuserResourceSchema },
      },
      attachValidation: true,
    },
    (request) =>
      subusers.update(authenticatedContextOf(request), request.params, request.body, bodyErrorsOf(request)),
  );

  typed.delete(
    '/api/client/servers/:server/users/:user',
    {
      schema: {
        tags,
        summary: "Remove a subuser from the server (needs user.delete; not one's own entry)",
        security,
        params: SubuserParamsSchema,
        response: { 204: { type: 'null', description: 'The subuser is removed.' } },
      },
      attachValidation: true,
    },
    async (request, reply) => {
      assertPathNamesSomething(request);
      await subusers.delete(authenticatedContextOf(request), request.params);
      return reply.code(204).send();
    },
  );
}

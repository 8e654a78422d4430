import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { BackupParamsSchema, RestoreBodySchema } from '../../backups/backup.schema.ts';
import type { Services } from '../../services.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { toFieldErrors } from '../validation.ts';

export function backupRoutes(app: FastifyInstance, { backups }: Pick<Services, 'backups'>): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();

  typed.post(
    '/api/client/servers/:server/backups/:backup/restore',
    {
      schema: {
        tags: ['backups'],
        summary:
          'Restore a backup onto its server (runs in the background; the server reads restoring_backup)',
        security: [{ bearerAuth: [] }],
        params: BackupParamsSchema,
        body: RestoreBodySchema,
        response: { 204: { type: 'null', description: 'The restore is queued.' } },
      },
      // The body is checked after visibility, state and permission, in the order the API promises.
      attachValidation: true,
    },
    async (request, reply) => {
      // A path segment too long to be any identifier names nothing.
      if (request.validationError?.validationContext === 'params') throw new NotFoundError();
      const bodyErrors = request.validationError?.validation
        ? toFieldErrors(request.validationError.validation as never)
        : null;
      await backups.requestRestore(authenticatedContextOf(request), request.params, request.body, bodyErrors);
      return reply.code(204).send();
    },
  );
}

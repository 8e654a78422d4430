import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  RetentionPolicyBodySchema,
  RetentionPolicyResourceSchema,
  RetentionPreviewQuerySchema,
  RetentionPreviewSchema,
} from '../../backups/backup-retention.schema.ts';
import { toRetentionPolicyResource, toRetentionPreview } from '../../backups/backup-retention.transform.ts';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import type { Services } from '../../services.ts';
import { clientSchema } from '../client-route.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { accessOf, can, serverAccess } from '../server-guard.ts';

const tag = 'backups';

/**
 * A server's retention policy for its automatic backups, under
 * /api/client/servers/{server}/backups/retention (beyond Pterodactyl). Each route needs
 * backup.delete: a policy deletes backups.
 */
export function backupRetentionRoutes(
  app: FastifyInstance,
  { backupRetention, access }: Pick<Services, 'backupRetention' | 'access'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/client/servers/:server/backups/retention';

  typed.get(
    base,
    {
      schema: clientSchema(tag, "The server's retention policy for automatic backups (backup.delete)", {
        params: ServerParamsSchema,
        response: { 200: RetentionPolicyResourceSchema },
      }),
      preValidation: serverAccess(access, can('backup.delete')),
    },
    async (request) =>
      toRetentionPolicyResource(await backupRetention.find(accessOf(request)), backupRetention.timeZone),
  );

  typed.put(
    base,
    {
      schema: clientSchema(
        tag,
        'Set the retention policy, applied after each successful automatic backup (backup.delete)',
        {
          params: ServerParamsSchema,
          body: RetentionPolicyBodySchema,
          response: { 200: RetentionPolicyResourceSchema },
        },
      ),
      preValidation: serverAccess(access, can('backup.delete')),
    },
    async (request) =>
      toRetentionPolicyResource(
        await backupRetention.update(authenticatedContextOf(request), accessOf(request), request.body),
        backupRetention.timeZone,
      ),
  );

  typed.get(
    `${base}/preview`,
    {
      schema: clientSchema(
        tag,
        'What the retention policy (or the one in the query) would keep and delete now; changes nothing (backup.delete)',
        {
          params: ServerParamsSchema,
          querystring: RetentionPreviewQuerySchema,
          response: { 200: RetentionPreviewSchema },
        },
      ),
      preValidation: serverAccess(access, can('backup.delete')),
    },
    async (request) => toRetentionPreview(await backupRetention.preview(accessOf(request), request.query)),
  );
}

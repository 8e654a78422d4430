import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  BackupListQuerySchema,
  BackupListSchema,
  BackupParamsSchema,
  BackupResourceSchema,
  BulkDeleteBodySchema,
  BulkDeleteResultSchema,
  CreateBackupBodySchema,
  DownloadQuerySchema,
  RestoreBodySchema,
  SignedUrlSchema,
} from '../../backups/backup.schema.ts';
import { toBackupResource, toBulkDeleteResource } from '../../backups/backup.transform.ts';
import {
  BackupFileDownloadQuerySchema,
  BackupFileListSchema,
  BackupFilesListQuerySchema,
} from '../../backups/backup-files.schema.ts';
import { toFileObject } from '../../backups/backup-files.transform.ts';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import type { Services } from '../../services.ts';
import { clientSchema, noContent } from '../client-route.ts';
import { listEnvelope } from '../pagination.ts';
import { authenticatedContextOf, linkOf } from '../request-context.ts';
import { accessOf, backupOf, backupOfRequest, can, idle, serverAccess } from '../server-guard.ts';

const tag = 'backups';

/** Backups under /api/client/servers/{server}/backups, restores included. */
export function serverBackupRoutes(
  app: FastifyInstance,
  {
    backupManagement,
    backupRestore,
    backupFiles,
    access,
  }: Pick<Services, 'backupManagement' | 'backupRestore' | 'backupFiles' | 'access'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/client/servers/:server/backups';
  const backup = backupOf((serverId, reference) => backupManagement.find(serverId, reference));

  typed.get(
    base,
    {
      schema: clientSchema(tag, "The server's backups, newest first (backup.read)", {
        params: ServerParamsSchema,
        querystring: BackupListQuerySchema,
        response: { 200: BackupListSchema },
      }),
      preValidation: serverAccess(access, can('backup.read')),
    },
    async (request) => {
      const access = accessOf(request);
      const [page, storage] = await Promise.all([
        backupManagement.list(access, request.query),
        backupManagement.storageOf(access),
      ]);
      return listEnvelope(request, page, toBackupResource, {
        backup_count: page.total,
        storage_bytes: storage,
      });
    },
  );

  typed.post(
    base,
    {
      schema: clientSchema(
        tag,
        'Start a backup of the server (backup.create); it is made in the background',
        { params: ServerParamsSchema, body: CreateBackupBodySchema, response: { 200: BackupResourceSchema } },
      ),
      preValidation: serverAccess(access, can('backup.create'), idle(access)),
    },
    async (request) =>
      toBackupResource(
        await backupManagement.create(authenticatedContextOf(request), accessOf(request), request.body),
      ),
  );

  typed.get(
    `${base}/:backup`,
    {
      schema: clientSchema(tag, 'One backup (backup.read)', {
        params: BackupParamsSchema,
        response: { 200: BackupResourceSchema },
      }),
      preValidation: serverAccess(access, backup, can('backup.read')),
    },
    (request) => toBackupResource(backupOfRequest(request)),
  );

  typed.get(
    `${base}/:backup/download`,
    {
      schema: clientSchema(
        tag,
        'A link that downloads the archive without a token, for 15 minutes (backup.download)',
        { params: BackupParamsSchema, response: { 200: SignedUrlSchema } },
      ),
      preValidation: serverAccess(access, backup, can('backup.download')),
    },
    async (request) => {
      const link = await backupManagement.downloadLink(
        authenticatedContextOf(request),
        backupOfRequest(request),
      );
      const url = link.kind === 'presigned' ? link.url : linkOf(request, link.path);
      return { object: 'signed_url' as const, attributes: { url } };
    },
  );

  typed.get(
    `${base}/:backup/files/list`,
    {
      schema: clientSchema(
        tag,
        "A directory of the backup, as the server's file manager lists one: directories first, then files, 1,000 a page (backup.download)",
        {
          params: BackupParamsSchema,
          querystring: BackupFilesListQuerySchema,
          response: { 200: BackupFileListSchema },
        },
      ),
      preValidation: serverAccess(access, backup, can('backup.download')),
    },
    async (request) => {
      const { directory, page, per_page } = request.query;
      const listed = await backupFiles.list(backupOfRequest(request), directory, { page, per_page });
      return listEnvelope(request, listed.page, toFileObject, { directory: listed.directory });
    },
  );

  typed.get(
    `${base}/:backup/files/download`,
    {
      schema: clientSchema(
        tag,
        'A link that downloads one file of the backup (a directory: a .tar.gz of it) without a token, for 15 minutes (backup.download)',
        {
          params: BackupParamsSchema,
          querystring: BackupFileDownloadQuerySchema,
          response: { 200: SignedUrlSchema },
        },
      ),
      preValidation: serverAccess(access, backup, can('backup.download')),
    },
    async (request) => {
      const link = await backupFiles.downloadLink(
        authenticatedContextOf(request),
        backupOfRequest(request),
        request.query.file,
      );
      return { object: 'signed_url' as const, attributes: { url: linkOf(request, link) } };
    },
  );

  typed.post(
    `${base}/:backup/lock`,
    {
      schema: clientSchema(
        tag,
        'Lock or unlock a backup; a locked backup cannot be deleted (backup.delete)',
        { params: BackupParamsSchema, response: { 200: BackupResourceSchema } },
      ),
      preValidation: serverAccess(access, backup, can('backup.delete')),
    },
    async (request) =>
      toBackupResource(
        await backupManagement.toggleLock(authenticatedContextOf(request), backupOfRequest(request)),
      ),
  );

  typed.delete(
    `${base}/:backup`,
    {
      schema: clientSchema(tag, 'Delete a backup and its archive (backup.delete)', {
        params: BackupParamsSchema,
      }),
      preValidation: serverAccess(access, backup, can('backup.delete')),
    },
    (request, reply) =>
      noContent(
        reply,
        backupManagement.delete(authenticatedContextOf(request), accessOf(request), backupOfRequest(request)),
      ),
  );

  typed.post(
    `${base}/delete`,
    {
      schema: clientSchema(
        tag,
        'Delete several backups (beyond Pterodactyl): each checked as a single delete is; answers which were deleted and which refused (backup.delete)',
        { params: ServerParamsSchema, body: BulkDeleteBodySchema, response: { 200: BulkDeleteResultSchema } },
      ),
      preValidation: serverAccess(access, can('backup.delete')),
    },
    async (request) =>
      toBulkDeleteResource(
        await backupManagement.deleteMany(
          authenticatedContextOf(request),
          accessOf(request),
          request.body.backups,
        ),
      ),
  );

  typed.post(
    `${base}/:backup/restore`,
    {
      schema: clientSchema(
        tag,
        'Restore a backup onto its server (runs in the background; the server reads restoring_backup)',
        {
          params: BackupParamsSchema,
          body: RestoreBodySchema,
          response: { 204: { type: 'null', description: 'The restore is queued.' } },
        },
      ),
      // The reference panel's order: the server, the backup, the server's state, the permission;
      // then the body (422); then whether the backup can be restored (400).
      preValidation: serverAccess(access, backup, idle(access), can('backup.restore')),
    },
    (request, reply) =>
      noContent(
        reply,
        backupRestore.requestRestore(
          authenticatedContextOf(request),
          accessOf(request),
          backupOfRequest(request),
          request.body,
        ),
      ),
  );
}

/** Where a signed download link leads: no bearer token, the signature is the credential. */
export function backupDownloadRoute(
  app: FastifyInstance,
  { backupManagement }: Pick<Services, 'backupManagement'>,
): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/download/backup',
    {
      schema: {
        tags: [tag],
        summary: 'Download a backup archive, or one file of a backup, through a signed link',
        querystring: DownloadQuerySchema,
      },
    },
    async (request, reply) => {
      const { stream, filename, bytes, type } = await backupManagement.openDownload(request.query.token);
      if (bytes !== null) reply.header('content-length', bytes);
      return reply
        .header('content-type', type)
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(stream);
    },
  );
}

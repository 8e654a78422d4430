import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  BackupListQuerySchema,
  BackupListSchema,
  BackupParamsSchema,
  BackupResourceSchema,
  CreateBackupBodySchema,
  DownloadQuerySchema,
  ServerParamsSchema,
  SignedUrlSchema,
} from '../../backups/backup.schema.ts';
import type { Services } from '../../services.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { authenticatedContextOf, pageUrlOf } from '../request-context.ts';

const tags = ['backups'];
const security = [{ bearerAuth: [] }];

/**
 * A path segment too long to be any identifier names nothing: 404, as for any unknown server or
 * backup (the schema's 422 would tell "malformed" from "not yours"). A bad query or body is 422.
 */
function assertValid(request: FastifyRequest): void {
  const error = request.validationError;
  if (error === undefined) return;
  if (error.validationContext === 'params') throw new NotFoundError();
  throw error;
}

/** Backups under /api/client/servers/{server}/backups (the restore route has a file of its own). */
export function serverBackupRoutes(
  app: FastifyInstance,
  { serverBackups }: Pick<Services, 'serverBackups'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/client/servers/:server/backups';

  typed.get(
    base,
    {
      schema: {
        tags,
        security,
        summary: "The server's backups, newest first (backup.read)",
        params: ServerParamsSchema,
        querystring: BackupListQuerySchema,
        response: { 200: BackupListSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverBackups.list(
        authenticatedContextOf(request).actor,
        request.params.server,
        request.query,
        pageUrlOf(request),
      );
    },
  );

  typed.post(
    base,
    {
      schema: {
        tags,
        security,
        summary: 'Start a backup of the server (backup.create); it is made in the background',
        params: ServerParamsSchema,
        body: CreateBackupBodySchema,
        response: { 200: BackupResourceSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverBackups.create(authenticatedContextOf(request), request.params.server, request.body);
    },
  );

  typed.get(
    `${base}/:backup`,
    {
      schema: {
        tags,
        security,
        summary: 'One backup (backup.read)',
        params: BackupParamsSchema,
        response: { 200: BackupResourceSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverBackups.get(authenticatedContextOf(request).actor, request.params);
    },
  );

  typed.get(
    `${base}/:backup/download`,
    {
      schema: {
        tags,
        security,
        summary: 'A link that downloads the archive without a token, for 15 minutes (backup.download)',
        params: BackupParamsSchema,
        response: { 200: SignedUrlSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverBackups.downloadLink(
        authenticatedContextOf(request),
        request.params,
        `${request.protocol}://${request.host}`,
      );
    },
  );

  typed.post(
    `${base}/:backup/lock`,
    {
      schema: {
        tags,
        security,
        summary: 'Lock or unlock a backup; a locked backup cannot be deleted (backup.delete)',
        params: BackupParamsSchema,
        response: { 200: BackupResourceSchema },
      },
      attachValidation: true,
    },
    (request) => {
      assertValid(request);
      return serverBackups.toggleLock(authenticatedContextOf(request), request.params);
    },
  );

  typed.delete(
    `${base}/:backup`,
    {
      schema: {
        tags,
        security,
        summary: 'Delete a backup and its archive (backup.delete)',
        params: BackupParamsSchema,
      },
      attachValidation: true,
    },
    async (request, reply) => {
      assertValid(request);
      await serverBackups.delete(authenticatedContextOf(request), request.params);
      return reply.code(204).send();
    },
  );
}

/** Where a signed download link leads: no bearer token, the signature is the credential. */
export function backupDownloadRoute(
  app: FastifyInstance,
  { serverBackups }: Pick<Services, 'serverBackups'>,
): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/download/backup',
    {
      schema: {
        tags,
        summary: 'Download a backup archive through a signed link',
        querystring: DownloadQuerySchema,
      },
    },
    async (request, reply) => {
      const { stream, filename, bytes } = await serverBackups.openDownload(request.query.token);
      return reply
        .header('content-type', 'application/gzip')
        .header('content-length', bytes)
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(stream);
    },
  );
}

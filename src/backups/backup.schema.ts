import { Type, type Static } from '@sinclair/typebox';

export const ServerParamsSchema = Type.Object({
  server: Type.String({ maxLength: 64, description: 'The server UUID or its 8-character identifier.' }),
});

export const BackupParamsSchema = Type.Object({
  ...ServerParamsSchema.properties,
  backup: Type.String({ maxLength: 64, description: 'The backup UUID.' }),
});
export type BackupParams = Static<typeof BackupParamsSchema>;

export const RestoreBodySchema = Type.Object({
  truncate: Type.Boolean({
    default: false,
    description:
      'Delete the server’s files first. Without it, the backup’s files are laid over the existing ones.',
  }),
});
export type RestoreBody = Static<typeof RestoreBodySchema>;

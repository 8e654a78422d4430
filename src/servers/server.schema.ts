import { Type, type Static } from '@sinclair/typebox';
import { BACKUP_WARNINGS, RECENT_BACKUP_DAYS } from '../backups/backup-summary.ts';
import { pagedListSchema, pageQuery } from '../shared/page.ts';
import { SingleLineText } from '../shared/text.ts';
import { SERVER_STATUSES } from './server.table.ts';

const WireTimeOrNull = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

/** Beyond the reference panel: a server's backups summed up, for the server list. */
export const BackupSummarySchema = Type.Object(
  {
    count: Type.Integer({
      description: 'Backups the server has, finished or not: what counts against `feature_limits.backups`.',
    }),
    bytes: Type.Integer({ description: 'The size of all of them together.' }),
    last_successful_at: WireTimeOrNull('When the last successful backup finished; null when none has.'),
    last_failed_at: WireTimeOrNull('When the last failed backup finished; null when none has.'),
    warnings: Type.Array(Type.Union(BACKUP_WARNINGS.map((warning) => Type.Literal(warning))), {
      description: `\`last_backup_failed\`: the most recently finished backup failed. \`no_recent_backup\`: no backup succeeded in the last ${RECENT_BACKUP_DAYS} days. Empty when neither holds.`,
    }),
  },
  { description: 'How well the server’s backups protect it (Aerie’s own; Pterodactyl clients ignore it).' },
);
export type BackupSummaryResource = Static<typeof BackupSummarySchema>;

export const ServerResourceSchema = Type.Object({
  object: Type.Literal('server'),
  attributes: Type.Object({
    server_owner: Type.Boolean({ description: 'Whether the caller owns the server.' }),
    identifier: Type.String(),
    uuid: Type.String({ format: 'uuid' }),
    name: Type.String(),
    description: Type.String(),
    status: Type.Union([...SERVER_STATUSES.map((status) => Type.Literal(status)), Type.Null()], {
      description: 'null when idle; otherwise what the server is busy with.',
    }),
    is_suspended: Type.Boolean(),
    is_installing: Type.Boolean(),
    is_transferring: Type.Boolean(),
    limits: Type.Object({
      memory: Type.Integer(),
      swap: Type.Integer(),
      disk: Type.Integer({ description: 'MiB; 0 means no limit.' }),
      io: Type.Integer(),
      cpu: Type.Integer(),
      threads: Type.Null(),
      oom_disabled: Type.Boolean(),
    }),
    feature_limits: Type.Object({
      databases: Type.Integer(),
      allocations: Type.Integer(),
      backups: Type.Integer(),
    }),
  }),
  meta: Type.Object({
    is_server_owner: Type.Boolean(),
    user_permissions: Type.Array(Type.String(), { description: '`*` for the owner and administrators.' }),
    backup_summary: Type.Union([BackupSummarySchema, Type.Null()], {
      description:
        'null when the caller may not read the server’s backups (a subuser without `backup.read`).',
    }),
  }),
});
export type ServerResource = Static<typeof ServerResourceSchema>;

export const ServerListQuerySchema = Type.Object({
  type: Type.Optional(
    Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('admin-all')], {
      description: 'owner: only servers the caller owns; admin, admin-all: every server (administrators).',
    }),
  ),
  ...pageQuery({ default: 50, maximum: 100 }),
});
export type ServerListQuery = Static<typeof ServerListQuerySchema>;

export const ServerListSchema = pagedListSchema(ServerResourceSchema);
export type ServerList = Static<typeof ServerListSchema>;

export const ServerParamsSchema = Type.Object({
  server: SingleLineText({ maxLength: 64, description: 'The server UUID or its 8-character identifier.' }),
});

export const AccountSchema = Type.Object({
  object: Type.Literal('user'),
  attributes: Type.Object({
    id: Type.Integer({ description: 'The user’s stable integer id, as the reference panel shows it.' }),
    uuid: Type.String({ format: 'uuid', description: 'The user’s UUID, as used everywhere else.' }),
    admin: Type.Boolean(),
    username: Type.String(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    language: Type.String(),
    use_totp: Type.Boolean({ description: 'Whether logging in also takes a two-factor code.' }),
  }),
});
export type Account = Static<typeof AccountSchema>;

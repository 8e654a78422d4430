import { Type, type Static } from '@sinclair/typebox';
import { pagedListSchema, pageQuery } from '../shared/page.ts';
import { ServerParamsSchema } from '../servers/server.schema.ts';
import { MultiLineText, SingleLineText } from '../shared/text.ts';
import { IGNORED_LIMITS } from './ignore-patterns.ts';

export const BackupParamsSchema = Type.Object({
  ...ServerParamsSchema.properties,
  backup: SingleLineText({ maxLength: 64, description: 'The backup UUID.' }),
});
export type BackupParams = Static<typeof BackupParamsSchema>;

/** The most paths one partial restore names. */
export const RESTORE_FILES_MAX = 1000;

export const RestoreBodySchema = Type.Object({
  truncate: Type.Boolean({
    default: false,
    description:
      'Delete the server’s files first. Without it, the backup’s files are laid over the existing ones.',
  }),
  undo_backup: Type.Optional(
    Type.Boolean({
      description:
        'Beyond Pterodactyl: before anything is replaced, keep the server’s files as they are as an automatic backup named for the restore, so that the restore can be undone. Unset: as the panel is set up (AERIE_RESTORE_UNDO_BACKUP).',
    }),
  ),
  files: Type.Optional(
    Type.Array(Type.String({ maxLength: 8192 }), {
      minItems: 1,
      maxItems: RESTORE_FILES_MAX,
      description:
        'Beyond Pterodactyl: restore only these paths of the backup (files or directories, from its root); the rest of the volume is left as it is. With `truncate`, each ends exactly as the backup has it (what is under it and not in the backup is removed); without, the backup’s versions are laid over it.',
    }),
  ),
});
export type RestoreBody = Static<typeof RestoreBodySchema>;

export const BackupProgressSchema = Type.Object(
  {
    operation: Type.Union([Type.Literal('backup'), Type.Literal('restore')]),
    phase: Type.String({
      description:
        'backup: `archiving`, then `uploading` (S3 only: the upload finishing); restore: `extracting`, `merging` (without truncate), `swapping`.',
    }),
    bytes_done: Type.Integer({
      description: 'Bytes of the archive written (backup) or read (restore) so far.',
    }),
    bytes_total: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The archive’s size: known for a restore; null for a backup.',
    }),
    files_done: Type.Integer(),
    files_total: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'Files the backup holds: known for a restore of a backup that counted them; null otherwise.',
    }),
    started_at: Type.String(),
    updated_at: Type.String({ description: 'When the progress was last written (about once a second).' }),
  },
  { description: 'The backup or restore running on this backup.' },
);
export type BackupProgressResource = Static<typeof BackupProgressSchema>;

export const BackupResourceSchema = Type.Object({
  object: Type.Literal('backup'),
  attributes: Type.Object({
    uuid: Type.String({ format: 'uuid' }),
    name: Type.String(),
    ignored_files: Type.Array(Type.String()),
    sha256_hash: Type.Union([Type.String(), Type.Null()]),
    checksum: Type.Union([Type.String(), Type.Null()], {
      description:
        '`sha256:<hex>`: of the archive file (an `archive` backup), or of the snapshot record (a `snapshot` backup), which names the hash of every directory and every chunk of every file: it changes if a byte of the backup does.',
    }),
    bytes: Type.Integer({
      description:
        'A `snapshot` backup: the size of its files (what a restore writes). An `archive` backup: the size of its `.tar.gz`.',
    }),
    created_at: Type.String(),
    completed_at: Type.Union([Type.String(), Type.Null()]),
    is_successful: Type.Boolean(),
    is_locked: Type.Boolean(),
    is_automatic: Type.Boolean({
      description:
        'Beyond Pterodactyl: made by a schedule. Automatic backups make room for themselves at the backup limit (the oldest unlocked one is deleted) and follow the retention policy; backups made by hand are never deleted but by a user.',
    }),
    file_count: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'Beyond Pterodactyl: how many files the finished backup holds; null while it is made, when it failed, and for backups made before Aerie counted them.',
    }),
    format: Type.Union([Type.Literal('archive'), Type.Literal('snapshot')], {
      description:
        "Beyond Pterodactyl: `snapshot`, deduplicated in the server's repository (each backup stores only the chunks that changed), or `archive`, a whole `.tar.gz`. Both restore and download alike.",
    }),
    added_bytes: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'Beyond Pterodactyl: what a `snapshot` backup added to storage when it was made (new chunks, compressed); null for an `archive` (all of it, `bytes`, is its own) and while it is made.',
    }),
    progress: Type.Union([BackupProgressSchema, Type.Null()], {
      description:
        'What runs on the backup now (a backup being made, or a restore of it); null when nothing does.',
    }),
  }),
});
export type BackupResource = Static<typeof BackupResourceSchema>;

export const BackupListQuerySchema = Type.Object({
  ...pageQuery({ default: 20, maximum: 50 }),
});
export type BackupListQuery = Static<typeof BackupListQuerySchema>;

export const BackupListSchema = pagedListSchema(BackupResourceSchema, {
  backup_count: Type.Integer(),
  storage_bytes: Type.Integer({
    description:
      "Beyond Pterodactyl: the storage the server's backups take: each archive's size plus what each snapshot added when it was made.",
  }),
});
export type BackupList = Static<typeof BackupListSchema>;

export const CreateBackupBodySchema = Type.Object({
  name: Type.Optional(SingleLineText({ maxLength: 191 })),
  ignored: Type.Optional(
    MultiLineText({
      format: 'backup-ignored',
      'x-rule': 'ignored',
      'x-message': `The :field field must hold at most ${IGNORED_LIMITS.patterns} patterns of at most ${IGNORED_LIMITS.patternCharacters} characters, ${IGNORED_LIMITS.characters} characters in all, without control characters.`,
      description: `Paths to leave out, one a line, as in a .gitignore (\`*.tmp\`, \`/cache\`, \`logs/\`, \`**\`, \`!keep\`); at most ${IGNORED_LIMITS.patterns} patterns, ${IGNORED_LIMITS.characters} characters in all.`,
    }),
  ),
  is_locked: Type.Boolean({ default: false }),
});
export type CreateBackupBody = Static<typeof CreateBackupBodySchema>;

export const SignedUrlSchema = Type.Object({
  object: Type.Literal('signed_url'),
  attributes: Type.Object({
    url: Type.String({ description: 'Downloads the archive, no token needed, for 15 minutes.' }),
  }),
});
export type SignedUrl = Static<typeof SignedUrlSchema>;

/** The longest download token: a link to one path of a backup carries the path (in base64). */
export const DOWNLOAD_TOKEN_MAX = 8192;

export const DownloadQuerySchema = Type.Object({ token: Type.String({ maxLength: DOWNLOAD_TOKEN_MAX }) });

/** The most backups one bulk delete names. */
export const BULK_DELETE_MAX = 100;

export const BulkDeleteBodySchema = Type.Object({
  backups: Type.Array(SingleLineText({ maxLength: 64, description: 'A backup UUID.' }), {
    minItems: 1,
    maxItems: BULK_DELETE_MAX,
    description: `The backups to delete, at most ${BULK_DELETE_MAX}; one named twice counts once.`,
  }),
});
export type BulkDeleteBody = Static<typeof BulkDeleteBodySchema>;

export const BulkDeleteResultSchema = Type.Object({
  object: Type.Literal('backup_bulk_delete'),
  attributes: Type.Object({
    deleted: Type.Array(Type.String({ format: 'uuid' }), { description: 'The backups deleted.' }),
    refused: Type.Array(
      Type.Object({
        uuid: Type.String({ description: 'The backup as it was named in the request.' }),
        status: Type.String({ description: 'What deleting it alone would have answered: 404, 400 or 409.' }),
        code: Type.String(),
        detail: Type.String(),
      }),
      {
        description:
          'The backups not deleted, with the error a single delete gives: unknown or of another server (404), locked (400), still being made or the server restoring (409).',
      },
    ),
  }),
});
export type BulkDeleteResultResource = Static<typeof BulkDeleteResultSchema>;

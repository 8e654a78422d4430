import { Type, type Static } from '@sinclair/typebox';
import { pageQuery, pagedListSchema } from '../shared/page.ts';
import { CATALOG_PAGE } from '../storage/catalog/backup-catalog.ts';

export const BackupFilesListQuerySchema = Type.Object({
  directory: Type.String({
    default: '/',
    maxLength: 8192,
    description: 'A directory of the backup, from its root (`/`, `/world`).',
  }),
  // A page holds a whole directory of up to 1,000 entries, as clients of Pterodactyl's
  // `/files/list` (which does not paginate) expect; a larger one is read page by page.
  ...pageQuery({ default: CATALOG_PAGE, maximum: CATALOG_PAGE }),
});
export type BackupFilesListQuery = Static<typeof BackupFilesListQuerySchema>;

export const FileObjectSchema = Type.Object({
  object: Type.Literal('file_object'),
  attributes: Type.Object({
    name: Type.String(),
    mode: Type.String({ description: 'As `ls -l` shows it: `-rw-r--r--`, `drwxr-xr-x`.' }),
    mode_bits: Type.String({ description: 'The permission bits in octal: `644`.' }),
    size: Type.Integer({ description: 'Bytes of a file; 0 for a directory.' }),
    is_file: Type.Boolean(),
    is_symlink: Type.Boolean({ description: 'Always false: backups do not keep links.' }),
    mimetype: Type.String({ description: 'Guessed from the name; `inode/directory` for a directory.' }),
    created_at: Type.String({ description: 'Backups keep no creation time: the modification time.' }),
    modified_at: Type.String(),
  }),
});
export type FileObject = Static<typeof FileObjectSchema>;

export const BackupFileListSchema = pagedListSchema(FileObjectSchema, {
  directory: Type.String({ description: 'The directory listed, normalized.' }),
});

export const BackupFileDownloadQuerySchema = Type.Object({
  file: Type.String({
    maxLength: 8192,
    description: 'A file of the backup, or a directory (downloaded as a .tar.gz of what it holds).',
  }),
});

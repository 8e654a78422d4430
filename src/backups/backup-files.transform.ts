import type { BackupFileEntry } from './backup-files.ts';
import type { FileObject } from './backup-files.schema.ts';

/** Media types by extension: the files a game server's volume mostly holds. */
const TYPES: Record<string, string> = {
  txt: 'text/plain',
  log: 'text/plain',
  properties: 'text/plain',
  cfg: 'text/plain',
  conf: 'text/plain',
  ini: 'text/plain',
  toml: 'text/plain',
  md: 'text/markdown',
  sh: 'text/x-shellscript',
  yml: 'application/yaml',
  yaml: 'application/yaml',
  json: 'application/json',
  xml: 'application/xml',
  csv: 'text/csv',
  html: 'text/html',
  js: 'text/javascript',
  jar: 'application/java-archive',
  zip: 'application/zip',
  gz: 'application/gzip',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
};

function mimetypeOf(entry: BackupFileEntry): string {
  if (entry.directory) return 'inode/directory';
  const dot = entry.name.lastIndexOf('.');
  const extension = dot > 0 ? entry.name.slice(dot + 1).toLowerCase() : '';
  return TYPES[extension] ?? 'application/octet-stream';
}

/** `rwxr-x---` for the 9 permission bits (setuid, setgid and sticky as `ls` shows them). */
function symbolicMode(entry: BackupFileEntry): string {
  const { mode } = entry;
  const bits = [...'rwxrwxrwx'].map((letter, i) => ((mode >> (8 - i)) & 1 ? letter : '-'));
  const special = (at: number, bit: number, set: string) => {
    if (mode & bit) bits[at] = bits[at] === 'x' ? set : set.toUpperCase();
  };
  special(2, 0o4000, 's');
  special(5, 0o2000, 's');
  special(8, 0o1000, 't');
  return (entry.directory ? 'd' : '-') + bits.join('');
}

export function toFileObject(entry: BackupFileEntry): FileObject {
  const time = `${new Date(entry.mtime).toISOString().slice(0, 19)}+00:00`;
  return {
    object: 'file_object',
    attributes: {
      name: entry.name,
      mode: symbolicMode(entry),
      mode_bits: (entry.mode & 0o7777).toString(8),
      size: entry.size,
      is_file: !entry.directory,
      is_symlink: false,
      mimetype: mimetypeOf(entry),
      created_at: time,
      modified_at: time,
    },
  };
}

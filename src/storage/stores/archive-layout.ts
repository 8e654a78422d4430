/**
 * Where archives are kept, in every store alike: `<server uuid>/<backup uuid>.tar.gz`, a path
 * under the local directory or an object key. Scratch files (local) end in `.incoming` or
 * `.incoming.partial`. The readiness probe stores its short-lived archives under `.ready/`.
 * What `backup reconcile` takes stock of is read through these names, and nothing else in a
 * directory or bucket is ever touched.
 */

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const DIRECTORY = new RegExp(`^(?:${UUID}|\\.ready)$`);
const ARCHIVE = new RegExp(`^(${UUID})\\.tar\\.gz$`);
const PARTIAL = new RegExp(`^(${UUID})\\.tar\\.gz\\.incoming(?:\\.partial)?$`);

/** The directory (key prefix) of the readiness probe's archives, apart from every server's. */
export const PROBE_DIRECTORY = '.ready';

/** Something a store holds in Aerie's layout, as `backup reconcile` takes stock of it. */
export interface StoredEntry {
  /**
   * `archive`: a backup's stored archive; `partial`: a scratch file an archive is (or was being)
   * written into; `upload`: a multipart upload begun and neither completed nor aborted.
   */
  kind: 'archive' | 'partial' | 'upload';
  /** The server's UUID it is stored under (or `.ready`, the readiness probe's). */
  serverId: string;
  backupId: string;
  /** Where it is: a path under the store's directory, or an object key. */
  location: string;
  /** When it was last written; for an upload, when it began. */
  modifiedAt: Date;
  /** Its size in bytes, when the store says (an upload's parts are not counted). */
  bytes: number | null;
  /** The multipart upload's id (an `upload` only). */
  uploadId?: string;
}

/** An entry that could not be removed, and why. */
export interface RemovalFailure {
  entry: StoredEntry;
  error: string;
}

/** Whether a directory name (a key's first segment) is one archives are kept under. */
export function isArchiveDirectory(name: string): boolean {
  return DIRECTORY.test(name);
}

/** What a file named `name` in an archive directory is, or undefined for anything else. */
export function archiveFileKind(name: string): { kind: 'archive' | 'partial'; backupId: string } | undefined {
  const archive = ARCHIVE.exec(name);
  if (archive) return { kind: 'archive', backupId: archive[1]! };
  const partial = PARTIAL.exec(name);
  if (partial) return { kind: 'partial', backupId: partial[1]! };
  return undefined;
}

/** The server and backup of an archive's object key, or undefined for a key outside the layout. */
export function parseArchiveKey(key: string): { serverId: string; backupId: string } | undefined {
  const [directory, name, ...rest] = key.split('/');
  if (directory === undefined || name === undefined || rest.length > 0) return undefined;
  if (!isArchiveDirectory(directory)) return undefined;
  const file = archiveFileKind(name);
  return file?.kind === 'archive' ? { serverId: directory, backupId: file.backupId } : undefined;
}

/**
 * A .tar.gz backup's catalog, from one read of the archive (its checksum taken on the way): every
 * entry judged as a restore judges it (archive-reader.ts), the directories gathered (a tar lists entries in any order, and
 * may leave out the directories above a file), then written as the catalog's pages. Links,
 * devices and the like are left out, as a restore leaves them out.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { readArchive } from '../archive/archive-reader.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import { CatalogWriter, type CatalogEntry, type CatalogSummary } from './backup-catalog.ts';

/** A directory the archive names only as the parent of something: as a restore creates it. */
const IMPLIED_MODE = 0o755;

/** Writes the catalog of `archive` (a file path, or a stream of its bytes) into `target`. */
export async function catalogArchive(
  archive: string | Readable,
  target: string,
  backup: { id: string; sha256: string | null },
  signal?: AbortSignal,
): Promise<CatalogSummary> {
  // Every directory ('' is the root) and its entries by name.
  const directories = new Map<string, Map<string, CatalogEntry>>([['', new Map()]]);
  const directoryOf = (rel: string, mtime: number): Map<string, CatalogEntry> => {
    let entries = directories.get(rel);
    if (entries !== undefined) return entries;
    entries = new Map();
    directories.set(rel, entries);
    const { parent, name } = split(rel);
    // A directory named only by what it holds: listed in its parent all the same.
    const above = directoryOf(parent, mtime);
    if (!above.has(name)) above.set(name, { name, directory: true, mode: IMPLIED_MODE, size: 0, mtime });
    return entries;
  };
  const hash = createHash('sha256');
  await readArchive(
    archive,
    ({ rel, kind, tar }) => {
      if (rel === '' || (kind !== 'file' && kind !== 'directory')) return;
      const mtime = tar.mtime instanceof Date && !Number.isNaN(tar.mtime.getTime()) ? tar.mtime.getTime() : 0;
      const { parent, name } = split(rel);
      const directory = kind === 'directory';
      const entry: CatalogEntry = {
        name,
        directory,
        mode: (tar.mode ?? (directory ? 0o755 : 0o644)) & 0o7777,
        size: directory ? 0 : tar.size,
        mtime,
      };
      if (directory) directoryOf(rel, mtime);
      directoryOf(parent, mtime).set(name, entry);
    },
    { onFileData: (chunk) => hash.update(chunk), ...(signal === undefined ? {} : { signal }) },
  );
  // Listed only if it is the backup's archive, as a restore would refuse it otherwise.
  if (backup.sha256 !== null && hash.digest('hex') !== backup.sha256)
    throw new ArchiveError('checksum-mismatch', 'the backup archive does not match its checksum');
  const writer = await CatalogWriter.create(target);
  try {
    for (const [rel, entries] of directories) await writer.directory(`/${rel}`, [...entries.values()]);
    return await writer.finish(backup.id, backup.sha256);
  } catch (error) {
    await writer.abandon();
    throw error;
  }
}

function split(rel: string): { parent: string; name: string } {
  const slash = rel.lastIndexOf('/');
  return slash === -1
    ? { parent: '', name: rel }
    : { parent: rel.slice(0, slash), name: rel.slice(slash + 1) };
}

/**
 * A .tar.gz backup's catalog, from one read of the archive (its checksum taken on the way): every
 * entry judged as a restore judges it (archive-reader.ts), the directories gathered (a tar lists entries in any order, and
 * may leave out the directories above a file), then written as the catalog's pages. Links,
 * devices and the like are left out, as a restore leaves them out.
 *
 * The same read notes the archive's pieces (gzip-members.ts: its gzip members, each with the
 * SHA-256 of its bytes) and where each entry is in the tar (tar-spans.ts); a directory's place
 * is everything beneath it, from the first byte of any of it to the last. With both, one path of
 * the backup is later read from the pieces that hold it (archive-path.ts).
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { readArchive } from '../archive/archive-reader.ts';
import { ArchiveError } from '../archive/archive.types.ts';
import { GzipMembers } from '../archive/gzip-members.ts';
import { TarSpans } from '../archive/tar-spans.ts';
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
  const members = new GzipMembers();
  const spans = new TarSpans();
  await readArchive(
    archive,
    ({ rel, kind, tar }) => {
      const span = spans.next();
      if (!TarSpans.agrees(span, tar)) spans.usable = false;
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
        // A directory's own header(s); `at` grows to cover what is beneath it (placeDirectories).
        ...(span === undefined
          ? {}
          : {
              at: [span.start, span.end] as [number, number],
              ...(directory ? { head: [span.start, span.end] as [number, number] } : {}),
            }),
      };
      if (directory) directoryOf(rel, mtime);
      directoryOf(parent, mtime).set(name, entry);
    },
    {
      onFileData: (chunk) => hash.update(chunk),
      onTarData: (chunk) => spans.write(chunk),
      inflate: members,
      ...(signal === undefined ? {} : { signal }),
    },
  );
  // Listed only if it is the backup's archive, as a restore would refuse it otherwise.
  if (backup.sha256 !== null && hash.digest('hex') !== backup.sha256)
    throw new ArchiveError('checksum-mismatch', 'the backup archive does not match its checksum');
  const ranged = spans.usable;
  if (ranged) placeDirectories(directories);
  const writer = await CatalogWriter.create(target);
  try {
    for (const [rel, entries] of directories) {
      const listed = [...entries.values()];
      await writer.directory(
        `/${rel}`,
        ranged ? listed : listed.map(({ at: _at, head: _head, ...entry }) => entry),
      );
    }
    if (!ranged) return await writer.finish(backup.id, backup.sha256);
    await writer.pieces(members.pieces);
    return await writer.finish(backup.id, backup.sha256, {
      pieces: members.pieces.length,
      tarBytes: members.tarBytes,
    });
  } catch (error) {
    await writer.abandon();
    throw error;
  }
}

/**
 * Gives each directory the place of everything beneath it (itself included, when the archive
 * names it): from the first byte of any of it in the tar to the last. Deepest first, so that a
 * directory's subdirectories have theirs already.
 */
function placeDirectories(directories: Map<string, Map<string, CatalogEntry>>): void {
  const depth = (rel: string) => rel.split('/').length;
  const deepestFirst = [...directories.keys()]
    .filter((rel) => rel !== '')
    .sort((a, b) => depth(b) - depth(a));
  for (const rel of deepestFirst) {
    const { parent, name } = split(rel);
    const self = directories.get(parent)?.get(name);
    if (self === undefined) continue;
    let at = self.at;
    for (const child of directories.get(rel)!.values()) {
      if (child.at === undefined) continue;
      at = at === undefined ? child.at : [Math.min(at[0], child.at[0]), Math.max(at[1], child.at[1])];
    }
    if (at === undefined) delete self.at;
    else self.at = at;
  }
}

function split(rel: string): { parent: string; name: string } {
  const slash = rel.lastIndexOf('/');
  return slash === -1
    ? { parent: '', name: rel }
    : { parent: rel.slice(0, slash), name: rel.slice(slash + 1) };
}

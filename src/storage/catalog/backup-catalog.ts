/**
 * A backup's catalog: every directory of the backup listed, ready to be served a page at a time,
 * so that browsing a backup of a million files costs one small file read per request whatever the
 * backup's size or store. It is built once (backup-files.ts builds it on first use, in a worker
 * thread) and kept on local disk as a cache: it can always be made again from the backup.
 *
 *   <catalog dir>/catalog.json         { v, backup, sha256, directories, files, ranges? }
 *   <catalog dir>/<path hash>-<n>.json  page n (from 1) of one directory: { total, entries }
 *   <catalog dir>/archive-pieces.bin    a .tar.gz backup's pieces, when `ranges` is set (archive-pieces.ts)
 *
 * A directory's pages hold CATALOG_PAGE entries each, directories first, then files, each group by
 * the bytes of their names. Every directory has a page 1, an empty one included: a missing page 1
 * means the backup has no such directory.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { compareNames } from '../../shared/compare-names.ts';
import type { ArchivePiece } from '../archive/gzip-members.ts';
import { writePieces } from './archive-pieces.ts';

/** Entries per page: a page is one small JSON file (about 100 KB at most). */
export const CATALOG_PAGE = 1000;

export interface CatalogEntry {
  name: string;
  directory: boolean;
  /** Permission bits. */
  mode: number;
  /** Bytes of a file; 0 for a directory. */
  size: number;
  /** Last modification, milliseconds since the epoch. */
  mtime: number;
  /**
   * In a .tar.gz backup's catalog that has `ranges`: where the entry is in the tar, [start, end)
   * (a directory's: all that is beneath it). Never shown to a client.
   */
  at?: [number, number];
  /** With `at`, for a directory the archive names: where its own header is. */
  head?: [number, number];
}

export interface CatalogPage {
  /** Entries in the whole directory. */
  total: number;
  entries: CatalogEntry[];
}

export interface CatalogSummary {
  v: 1;
  backup: string;
  /** The checksum of the backup the catalog was made from. */
  sha256: string | null;
  directories: number;
  files: number;
  /**
   * A .tar.gz backup's: its pieces are in archive-pieces.bin and its entries say where they are
   * (`at`), so one path is read from the pieces that hold it. Absent (a catalog made before, or
   * of an archive whose entries could not be placed): one path is read from the whole archive.
   */
  ranges?: { pieces: number; tarBytes: number };
}

const SUMMARY = 'catalog.json';

/** The file of page `page` of directory `dir` (an absolute, normalized path in the backup). */
function pageFile(dir: string, page: number): string {
  return `${createHash('sha256').update(dir).digest('hex').slice(0, 40)}-${page}.json`;
}

/** Directories first, then files; each by the bytes of their names (as trees keep them). */
export function catalogOrder(a: CatalogEntry, b: CatalogEntry): number {
  if (a.directory !== b.directory) return a.directory ? -1 : 1;
  return compareNames(a.name, b.name);
}

/**
 * Writes a catalog into a scratch directory beside `target`, then moves it into place in one
 * rename: a reader sees a whole catalog or none, and a build killed half-way leaves only scratch.
 */
export class CatalogWriter {
  private directories = 0;
  private files = 0;
  private readonly scratch: string;

  private constructor(private readonly target: string) {
    this.scratch = `${target}.building-${randomUUID()}`;
  }

  static async create(target: string): Promise<CatalogWriter> {
    const writer = new CatalogWriter(target);
    await mkdir(writer.scratch, { recursive: true });
    return writer;
  }

  /** Lists directory `dir` (absolute, normalized: `/`, `/world`). */
  async directory(dir: string, entries: CatalogEntry[]): Promise<void> {
    const sorted = [...entries].sort(catalogOrder);
    this.directories += 1;
    this.files += sorted.filter((entry) => !entry.directory).length;
    const pages = Math.max(1, Math.ceil(sorted.length / CATALOG_PAGE));
    for (let page = 1; page <= pages; page++) {
      const slice = sorted.slice((page - 1) * CATALOG_PAGE, page * CATALOG_PAGE);
      const body: CatalogPage = { total: sorted.length, entries: slice };
      await writeFile(path.join(this.scratch, pageFile(dir, page)), JSON.stringify(body));
    }
  }

  /** Writes a .tar.gz backup's pieces (they go with `ranges` in finish). */
  async pieces(pieces: readonly ArchivePiece[]): Promise<void> {
    await writePieces(this.scratch, pieces);
  }

  /** Writes the summary and puts the catalog in place (a catalog there already is kept). */
  async finish(
    backup: string,
    sha256: string | null,
    ranges?: CatalogSummary['ranges'],
  ): Promise<CatalogSummary> {
    const summary: CatalogSummary = {
      v: 1,
      backup,
      sha256,
      directories: this.directories,
      files: this.files,
      ...(ranges === undefined ? {} : { ranges }),
    };
    await writeFile(path.join(this.scratch, SUMMARY), JSON.stringify(summary));
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(this.scratch, this.target);
        return summary;
      } catch (error) {
        if (!isCode(error, 'ENOTEMPTY') && !isCode(error, 'EEXIST')) {
          await this.abandon();
          throw error;
        }
      }
      // Another build (of this process or another) finished first: its catalog is as good.
      if (attempt > 0 || (await readCatalogSummary(this.target, sha256)) !== null) {
        await this.abandon();
        return summary;
      }
      // A stale catalog (of a backup by this id that is no longer the same) is moved aside in one
      // rename, never emptied in place under a reader, then removed.
      const stale = `${this.target}.stale-${randomUUID()}`;
      await rename(this.target, stale).catch(() => undefined);
      await rm(stale, { recursive: true, force: true });
    }
  }

  async abandon(): Promise<void> {
    await rm(this.scratch, { recursive: true, force: true });
  }
}

function isCode(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === code;
}

/** The catalog in `dir`, if one is there and was made from the backup with checksum `sha256`. */
export async function readCatalogSummary(dir: string, sha256: string | null): Promise<CatalogSummary | null> {
  try {
    const summary = JSON.parse(await readFile(path.join(dir, SUMMARY), 'utf8')) as CatalogSummary;
    return summary.v === 1 && summary.sha256 === sha256 ? summary : null;
  } catch {
    return null;
  }
}

/**
 * Page `page` (from 1) of directory `directory` in the catalog in `dir`; null when the backup has
 * no such directory. A page past the last is empty.
 */
export async function readCatalogPage(
  dir: string,
  directory: string,
  page: number,
): Promise<CatalogPage | null> {
  const read = async (n: number) => {
    try {
      return JSON.parse(await readFile(path.join(dir, pageFile(directory, n)), 'utf8')) as CatalogPage;
    } catch (error) {
      if (isCode(error, 'ENOENT')) return null;
      throw error;
    }
  };
  const found = await read(page);
  if (found !== null || page === 1) return found;
  const first = await read(1);
  return first === null ? null : { total: first.total, entries: [] };
}

/** Removes a catalog (a deleted backup's); nothing there is fine. */
export async function removeCatalog(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

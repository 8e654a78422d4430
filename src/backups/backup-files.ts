/**
 * Looking inside a backup without restoring it: a directory's entries a page at a time (from the
 * backup's catalog, built once on first use in a worker thread and kept on local disk), and
 * signed links that download one file, or one directory as a .tar.gz.
 */
import path from 'node:path';
import type { ActivityService } from '../activity/activity.service.ts';
import type { AuthenticatedContext } from '../users/actor.ts';
import { DisplayError, NotFoundError, ValidationError } from '../shared/errors.ts';
import { DOWNLOAD_TOKEN_MAX } from './backup.schema.ts';
import type { Page } from '../shared/page.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import { fromStore } from '../storage/stores/store-unreachable.ts';
import {
  CATALOG_PAGE,
  readCatalogPage,
  readCatalogSummary,
  removeCatalog,
  type CatalogEntry,
} from '../storage/catalog/backup-catalog.ts';
import { piecesCovering, slicesCovering, type ArchiveSlice } from '../storage/catalog/archive-pieces.ts';
import { backupEntry } from './backup-management.service.ts';
import { backupPath } from './backup-path.ts';
import type { Backup } from './backup.ts';
import type { DownloadSigner } from './download-signer.ts';
import { catalogInThread } from './backup-catalog-work.ts';
import type { SnapshotBackups } from './snapshot-backups.ts';

/** How long a link to one file works, as a backup's download link. */
const LINK_SECONDS = 15 * 60;

export interface BackupFilesDeps {
  snapshots: SnapshotBackups;
  activity: ActivityService;
  signer: DownloadSigner;
  clock: () => Date;
  /** The store a backup is in, by its `disk`. */
  storageOf: (disk: string) => BackupStorage;
  /** Where catalogs are kept: `<data dir>/cache/catalogs`. */
  catalogsDir: string;
}

/** An entry of a backup's directory listing. */
export type BackupFileEntry = CatalogEntry;

export class BackupFiles {
  /** Catalogs being built by this process, by backup: two requests wait for one build. */
  private readonly building = new Map<string, Promise<void>>();

  constructor(private readonly deps: BackupFilesDeps) {}

  /**
   * One page of the entries of `directory` in the backup: directories first, then files, each by
   * name. `directory` is a path in the backup (`/`, `/world`); one the backup lacks is a 404.
   */
  async list(
    backup: Backup,
    directory: string,
    page: { page: number; per_page: number },
  ): Promise<{ directory: string; page: Page<BackupFileEntry> }> {
    const dir = backupPath(directory, 'directory');
    const catalog = await this.catalogOf(backup);
    const offset = (page.page - 1) * page.per_page;
    const first = Math.floor(offset / CATALOG_PAGE) + 1;
    const found = await readCatalogPage(catalog, dir, first);
    if (found === null) throw new NotFoundError('This backup has no such directory.');
    const items = found.entries.slice(offset % CATALOG_PAGE, (offset % CATALOG_PAGE) + page.per_page);
    // A window that runs past a catalog page takes the rest from the next one.
    if (items.length < page.per_page && offset + items.length < found.total) {
      const next = await readCatalogPage(catalog, dir, first + 1);
      items.push(...(next?.entries ?? []).slice(0, page.per_page - items.length));
    }
    return { directory: dir, page: { items, total: found.total, page: page.page, perPage: page.per_page } };
  }

  /**
   * A signed link that downloads `file` from the backup: a file's bytes, or a directory as a
   * .tar.gz of what it holds. A path the backup lacks is a 404.
   */
  async downloadLink(context: AuthenticatedContext, backup: Backup, file: string): Promise<string> {
    const normalized = backupPath(file, 'file');
    const catalog = await this.catalogOf(backup);
    if ((await catalogEntry(catalog, normalized)) === null)
      throw new NotFoundError('This backup has no such file.');
    const expires = Math.floor(this.deps.clock().getTime() / 1000) + LINK_SECONDS;
    const token = this.deps.signer.sign({
      serverId: backup.serverId,
      backupId: backup.id,
      expires,
      path: normalized,
    });
    // A path of names that JSON escapes (control characters) can make a token too long to follow.
    if (token.length > DOWNLOAD_TOKEN_MAX)
      throw new ValidationError([
        { field: 'file', rule: 'path', message: 'The file path is too long to make a download link for.' },
      ]);
    await this.deps.activity.record(
      context,
      backupEntry('server:backup.download', context.actor, backup, { file: normalized }),
    );
    return `/download/backup?token=${token}`;
  }

  /** The first of `paths` (normalized, see backupPath) the backup does not hold; null when it holds them all. */
  async missing(backup: Backup, paths: readonly string[]): Promise<string | null> {
    const catalog = await this.catalogOf(backup);
    for (const file of paths) if ((await catalogEntry(catalog, file)) === null) return file;
    return null;
  }

  /** What the backup holds at `file` (normalized, see backupPath): a file or a directory; null for nothing. */
  async entryOf(backup: Backup, file: string): Promise<BackupFileEntry | null> {
    return catalogEntry(await this.catalogOf(backup), file);
  }

  /**
   * Where `entry` (as entryOf gave it) is in a .tar.gz backup's archive: its place in the tar and
   * the pieces that hold it, to read those alone; null when the catalog does not say (one made
   * before pieces were noted, or of an archive whose entries could not be placed): the archive is
   * then read whole.
   */
  async sliceOf(backup: Backup, entry: BackupFileEntry): Promise<ArchiveSlice | null> {
    if (entry.at === undefined || backup.format !== 'archive') return null;
    const catalog = await this.catalogOf(backup);
    const summary = await readCatalogSummary(catalog, backup.sha256);
    if (summary?.ranges === undefined) return null;
    return piecesCovering(catalog, summary.ranges.pieces, { start: entry.at[0], end: entry.at[1] });
  }

  /**
   * What a partial restore of a .tar.gz backup reads: the pieces of its archive that hold `paths`
   * (relative to the backup's root, none under another) and the headers of the directories above
   * them. Only from a catalog this node has already (the restore's paths were checked against it
   * when it was asked for); null when there is none, or it does not say: the archive is then read
   * whole.
   */
  async restoreSlices(backup: Backup, paths: readonly string[]): Promise<ArchiveSlice[] | null> {
    if (backup.format !== 'archive' || !backup.isSuccessful) return null;
    const catalog = this.catalogDir(backup);
    const summary = await readCatalogSummary(catalog, backup.sha256);
    if (summary?.ranges === undefined) return null;
    const spans: [number, number][] = [];
    const above = new Set<string>();
    for (const rel of paths) {
      const entry = await catalogEntry(catalog, `/${rel}`);
      if (entry?.at === undefined) return null;
      spans.push(entry.at);
      for (let at = rel.indexOf('/'); at !== -1; at = rel.indexOf('/', at + 1)) above.add(rel.slice(0, at));
    }
    // A directory above a chosen path is written with its own mode and times when the archive has it.
    for (const rel of above) {
      const head = (await catalogEntry(catalog, `/${rel}`))?.head;
      if (head !== undefined) spans.push(head);
    }
    return slicesCovering(catalog, summary.ranges.pieces, spans);
  }

  /** Forgets a deleted backup's catalog on this node. */
  async forget(backup: Pick<Backup, 'id'>): Promise<void> {
    await removeCatalog(this.catalogDir(backup));
  }

  private catalogDir(backup: Pick<Backup, 'id'>): string {
    return path.join(this.deps.catalogsDir, backup.id);
  }

  /** The directory of the backup's catalog, built first if this node has none yet. */
  private async catalogOf(backup: Backup): Promise<string> {
    if (!backup.isSuccessful)
      throw new DisplayError('This backup cannot be browsed: not completed or failed.');
    const dir = this.catalogDir(backup);
    if ((await readCatalogSummary(dir, backup.sha256)) !== null) return dir;
    let build = this.building.get(backup.id);
    if (build === undefined) {
      build = this.build(backup, dir).finally(() => this.building.delete(backup.id));
      this.building.set(backup.id, build);
    }
    await build;
    return dir;
  }

  private async build(backup: Backup, dir: string): Promise<void> {
    const input = { backup: { id: backup.id, sha256: backup.sha256 }, target: dir };
    try {
      if (backup.format === 'snapshot') {
        const repository = this.deps.snapshots.repositoryOf(backup);
        await this.deps.snapshots.reading(backup, () =>
          catalogInThread({ ...input, source: { repository } }),
        );
      } else {
        const archive = await fromStore(() =>
          this.deps.storageOf(backup.disk).locate(backup.serverId, backup.id),
        );
        await catalogInThread({ ...input, source: { archive } });
      }
    } catch (error) {
      if (error instanceof ArchiveError && error.reason === 'not-found')
        throw new NotFoundError('This backup is missing from storage.');
      if (error instanceof ArchiveError)
        throw new DisplayError(`This backup cannot be browsed: ${error.message}.`);
      throw error;
    }
  }
}

/** What the catalog lists at `file`; null for nothing (`/`, the backup's root, is a directory). */
async function catalogEntry(catalog: string, file: string): Promise<CatalogEntry | null> {
  if (file === '/') return { name: '', directory: true, mode: 0o755, size: 0, mtime: 0 };
  const parent = path.posix.dirname(file);
  const name = path.posix.basename(file);
  // The directory's pages, until the name is found (one page for most directories).
  for (let page = 1; ; page++) {
    const found = await readCatalogPage(catalog, parent, page);
    if (found === null || found.entries.length === 0) return null;
    const entry = found.entries.find((candidate) => candidate.name === name);
    if (entry !== undefined) return entry;
  }
}

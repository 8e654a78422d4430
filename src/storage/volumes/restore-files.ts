/**
 * The filesystem half of a restore job, built to survive the worker dying at any point.
 *
 * A restore is staged next to the live volume (same parent directory, so same filesystem), then
 * swapped in with two renames. The extraction's report is saved beside the staging tree before the
 * swap, so that a restore finished after a crash reports what a normal one does. recoverRestore()
 * looks at which of these exist and finishes or undoes whatever a dead worker left behind. Nothing
 * here follows a symlink that lives inside a volume: the live tree is read through VolumeDir, and
 * trees are removed without following links.
 *
 * A volume that is a mount point (its own filesystem, or a bind mount) can be neither renamed
 * (EBUSY) nor hard-linked from (EXDEV). Its restore is staged inside the volume itself, in hidden
 * directories named after the job, and swapped in entry by entry (swap-in-place.ts). What that
 * gives: a failure before the swap leaves the volume's contents exactly as they were; once the
 * swap has begun, a crash is finished by recovery, so the volume ends as the old tree or the
 * restored one, never a mix; but while the swap runs, the volume holds part of each for a moment
 * (its server is `restoring_backup` meanwhile). The replaced entries are deleted before the
 * outcome is recorded (they cannot leave the volume's filesystem for the trash). Mount points
 * below the volume's root are not moved across: such a restore fails, at once, naming EXDEV or
 * EBUSY.
 */
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  symlinkSync,
  utimesSync,
  type Stats,
} from 'node:fs';
import { chmod, lstat, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  ArchiveError,
  type ExtractLimits,
  type ExtractReport,
  type Progress,
} from '../archive/archive.types.ts';
import { DirectoryRoot, removeTree, syncDirectory } from '../directory-root.ts';
import { isMountPoint, mountsInside } from './mount-point.ts';
import { readReport, saveReport } from './restore-report.ts';
import type { RestoreSelection } from './restore-selection.ts';
import { inPlaceNames, recoverInPlace, swapInPlace } from './swap-in-place.ts';
import { trashOf, type RecoveryOutcome, type RestorePaths } from './restore-paths.ts';

export { restorePaths, type InPlacePaths, type RecoveryOutcome, type RestorePaths } from './restore-paths.ts';
import { isGone, VolumeDir } from '../volume-dir.ts';
import { ENTRY_COST, extractArchive } from '../archive/extract.ts';

export interface StageOptions {
  /** true: the volume becomes exactly the backup. false: files only in the live volume are kept. */
  truncate: boolean;
  maxBytes: number | null;
  /** Stops the work when aborted (the job's lease was lost); staging is then removed. */
  signal?: AbortSignal;
  /** The least time between two progress reports (250 ms unless set). */
  progressIntervalMs?: number;
  /** A partial restore: the paths brought back; the rest of the volume stays as it is. */
  only?: RestoreSelection;
}

/**
 * Fills `staging` (an empty directory) with the backup, within `limits`, and reports what it
 * wrote: how a backup that is not an archive (a snapshot) is staged, typically by extractEntries.
 * What it leaves behind when it fails is removed by stageRestore.
 */
export type StageSource = (
  staging: string,
  limits: ExtractLimits,
  onProgress?: (p: Progress) => void,
) => Promise<ExtractReport>;

/**
 * Builds the restored tree in `paths.staging` (in `paths.inPlace.staging` for a volume that is a
 * mount point): the backup (an archive, a file path or a stream of its bytes, or what `source`
 * writes), plus (unless truncating) whatever only the live volume has, then saves the report
 * beside it (`paths.report`). The live volume's entries are only read. On failure the staging
 * directory and the report are removed.
 */
export async function stageRestore(
  paths: RestorePaths,
  source: string | Readable | StageSource,
  options: StageOptions,
  onProgress?: (p: Progress) => void,
): Promise<ExtractReport> {
  const volumeStats = await stat(paths.volume);
  const nested = await mountsInside(paths.volume);
  if (nested.length > 0) {
    throw new ArchiveError(
      'nested-mount',
      `the volume has another filesystem mounted inside it (${nested[0]!.slice(0, 100)}); a restore would move ` +
        'or delete what that mount holds, so it was refused: unmount it, or mount it outside the volume',
    );
  }
  // Decided here, before any work: swapIn and recovery follow whichever staging exists.
  const inPlace = await isMountPoint(paths.volume);
  const staging = inPlace ? paths.inPlace.staging : paths.staging;
  const { only } = options;
  await rm(paths.report, { force: true });
  await removeTree(staging);
  await mkdir(staging, { mode: 0o700 });
  try {
    let last: Progress = { files: 0, bytes: 0 };
    const extract: StageSource =
      typeof source === 'function'
        ? source
        : (dest, limits, progress) => extractArchive(source, dest, limits, progress);
    const report = await extract(
      staging,
      {
        maxBytes: options.maxBytes,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.progressIntervalMs === undefined
          ? {}
          : { progressIntervalMs: options.progressIntervalMs }),
        ...(only === undefined ? {} : { only: (rel: string) => only.wants(rel) }),
      },
      onProgress && ((progress) => onProgress((last = progress))),
    );
    options.signal?.throwIfAborted();
    // A partial restore keeps the rest of the volume, truncating or not.
    if (!options.truncate || only !== undefined) {
      onProgress?.({ ...last, phase: 'merging' });
      const used = report.bytes + ENTRY_COST * (report.files + report.directories);
      const skipped = inPlace ? inPlaceNames(paths) : new Set<string>();
      const merge = new LiveMerge(new MergeBudget(used, options.maxBytes), {
        truncate: options.truncate,
        ...(only === undefined ? {} : { only }),
      });
      await mergeLiveVolume(paths.volume, staging, merge, skipped);
    }
    await chmod(staging, volumeStats.mode & 0o7777);
    // The report names the directory that will be the volume: the staging tree, or (in place) the
    // volume itself, whose entries are swapped.
    await saveReport(paths.report, inPlace ? paths.volume : staging, report);
    await syncDirectory(path.dirname(paths.report)); // on disk before the swap it describes
    return report;
  } catch (err) {
    await discardStaging(paths);
    throw err;
  }
}

/** Removes what stageRestore builds (the staging tree and its report), as after a failure. */
export async function discardStaging(paths: RestorePaths): Promise<void> {
  await rm(paths.report, { force: true });
  await removeTree(paths.staging);
  await removeTree(paths.inPlace.staging);
}

/**
 * The report saved by stageRestore, once its staging tree has been swapped in as the volume; null
 * when there is none (or it is unreadable, or describes a tree that was never swapped in).
 */
export function savedReport(paths: RestorePaths): Promise<ExtractReport | null> {
  return readReport(paths.report, paths.volume);
}

/** Deletes the saved report: to be called once the restore's outcome has been recorded. */
export async function discardReport(paths: RestorePaths): Promise<void> {
  await rm(paths.report, { force: true });
}

/**
 * Replaces the live volume with the staged one: two atomic renames. A third moves the old tree
 * into the trash, where emptyTrash deletes it once the outcome is recorded: deleting a whole volume
 * takes seconds (as long as extracting it, on the bench tree), and the server need not wait for it.
 */
export async function swapIn(paths: RestorePaths): Promise<void> {
  if (await exists(paths.inPlace.staging)) return swapInPlace(paths);
  await rename(paths.volume, paths.retired);
  await rename(paths.staging, paths.volume);
  await mkdir(path.dirname(paths.trash), { recursive: true, mode: 0o700 });
  await removeTree(paths.trash); // (nothing: each attempt's name is its own)
  await rename(paths.retired, paths.trash);
  await syncDirectory(path.dirname(paths.volume));
}

/**
 * Deletes everything in the trash of `volumesDir`: the tree the last restore replaced, and any a
 * worker that died before deleting its own left behind. Entries another worker deletes at the
 * same time are no error; the first other failure is thrown once every entry has been tried.
 */
export async function emptyTrash(volumesDir: string): Promise<void> {
  const trash = trashOf(volumesDir);
  const names = await readdir(trash).catch((err: unknown) => {
    if (isGone(err)) return [];
    throw err;
  });
  let failure: Error | null = null;
  for (const name of names) {
    try {
      await removeTree(path.join(trash, name));
    } catch (err) {
      if (!isGone(err)) failure ??= err instanceof Error ? err : new Error(String(err));
    }
  }
  if (failure !== null) throw failure;
}

/**
 * Finishes or undoes a restore whose worker died. Safe to call any number of times. A completed
 * restore's saved report is kept (read it with savedReport) until discardReport.
 */
export async function recoverRestore(paths: RestorePaths): Promise<RecoveryOutcome> {
  const inPlace = await recoverInPlace(paths);
  if (inPlace !== null) return inPlace;
  const [volume, staging, retired, report] = await Promise.all([
    exists(paths.volume),
    exists(paths.staging),
    exists(paths.retired),
    exists(paths.report),
  ]);
  if (!volume && retired) {
    // Died between the two renames of swapIn (or, with no staging left, somewhere odd): put a
    // volume back in place first, then clean up.
    if (!staging) await rm(paths.report, { force: true });
    await rename(staging ? paths.staging : paths.retired, paths.volume);
    await syncDirectory(path.dirname(paths.volume));
    if (!staging) return 'rolled-back';
    await removeTree(paths.retired);
    return 'completed';
  }
  if (retired) {
    // The swap finished; only the deletion of the old tree was cut short.
    await removeTree(paths.staging);
    await removeTree(paths.retired);
    return 'completed';
  }
  if (staging) {
    // Never swapped in: the report goes too, and the restore starts over.
    await rm(paths.report, { force: true });
    await removeTree(paths.staging);
    return 'rolled-back';
  }
  if (report) {
    // The swap and the cleanup finished; only the outcome was not recorded yet.
    if ((await savedReport(paths)) !== null) return 'completed';
    await rm(paths.report, { force: true });
  }
  return 'clean';
}

class MergeBudget {
  constructor(
    private used: number,
    private readonly limit: number | null,
  ) {}

  charge(bytes: number, rel: string): void {
    this.used += bytes;
    if (this.limit !== null && this.used > this.limit) {
      throw new ArchiveError(
        'disk-limit',
        `the backup plus the kept files would exceed the disk limit of ${this.limit} bytes`,
        rel,
      );
    }
  }
}

/** Merges the live volume into staging; `skipped`: names at its root that are not the user's. */
async function mergeLiveVolume(
  volume: string,
  staging: string,
  merge: LiveMerge,
  skipped: ReadonlySet<string>,
): Promise<void> {
  const live = await VolumeDir.open(volume);
  try {
    const staged = await DirectoryRoot.open(staging);
    try {
      await merge.into(staged).directory(live, '', skipped);
    } finally {
      await staged.close();
    }
  } finally {
    await live.close();
  }
}

/**
 * Adds to staging what the live volume has and the backup does not, charged to `budget`. Staged
 * paths are reached through `staged` (they may be longer than one system call accepts).
 */
class LiveMerge {
  private staged!: DirectoryRoot;

  constructor(
    private readonly budget: MergeBudget,
    /** A partial restore: what it chose, and whether a chosen path ends exactly as the backup has it. */
    private readonly partial: { truncate: boolean; only?: RestoreSelection },
  ) {}

  into(staged: DirectoryRoot): this {
    this.staged = staged;
    return this;
  }

  /** Whether the live volume has no say at `rel`: a chosen path restored with truncate. */
  private replaced(rel: string): boolean {
    return this.partial.truncate && this.partial.only?.restores(rel) === true;
  }

  /** Adds to staging, under `prefix`, every entry of `live` that the backup does not have. */
  async directory(live: VolumeDir, prefix: string, skipped: ReadonlySet<string> = new Set()): Promise<void> {
    for await (const entry of live.entries()) {
      if (!skipped.has(entry.name)) await this.entry(live, entry.name, prefix + entry.name);
    }
  }

  private async entry(live: VolumeDir, name: string, rel: string): Promise<void> {
    const source = live.child(name);
    const stats = ignoreGone(() => lstatSync(source));
    if (stats === null) return; // removed while we walked
    const existing = await this.atStaged(rel, (target) => ignoreGone(() => lstatSync(target)));
    if (existing !== null) {
      // The backup has this path, so the backup's version wins, whatever either kind is. Only two
      // real directories are merged further down (not a chosen one, with truncate).
      if (existing.isDirectory() && stats.isDirectory() && !this.replaced(rel))
        await this.intoStaged(live, name, rel, existing, stats);
      return;
    }
    if (this.replaced(rel)) return; // under a chosen path, and not in the backup: left out
    if (stats.isDirectory()) {
      await this.copyDirectory(live, name, rel);
    } else if (stats.isFile()) {
      this.budget.charge(stats.size + ENTRY_COST, rel);
      // Same filesystem: shares the inode, copies nothing.
      await this.atStaged(rel, (target) => ignoreGone(() => linkSync(source, target)));
    } else if (stats.isSymbolicLink()) {
      this.budget.charge(ENTRY_COST, rel);
      const linkText = ignoreGone(() => readlinkSync(source));
      // The user's link, recreated as is, never followed.
      if (linkText !== null) await this.atStaged(rel, (target) => symlinkSync(linkText, target));
    }
    // Sockets, FIFOs and devices are not carried over.
  }

  private async intoStaged(
    live: VolumeDir,
    name: string,
    rel: string,
    existing: Stats,
    liveStats: Stats,
  ): Promise<void> {
    const merged = await inSubdirectory(live, name, (dir) => this.directory(dir, `${rel}/`));
    if (!merged) return;
    const { only } = this.partial;
    if (only !== undefined && !only.restores(rel)) {
      // Above a chosen path: the directory is the live one, its mode and times too.
      await this.atStaged(rel, (target) => {
        chmodSync(target, liveStats.mode & 0o7777);
        utimesSync(target, liveStats.atime, liveStats.mtime);
      });
      return;
    }
    // Adding entries changed the backup's mtime.
    await this.atStaged(rel, (target) => utimesSync(target, existing.atime, existing.mtime));
  }

  private async copyDirectory(live: VolumeDir, name: string, rel: string): Promise<void> {
    await inSubdirectory(live, name, async (dir) => {
      this.budget.charge(ENTRY_COST, rel);
      await this.atStaged(rel, (target) => mkdirSync(target, { mode: 0o700 }));
      await this.directory(dir, `${rel}/`);
      const stats = await dir.stat();
      await this.atStaged(rel, (target) => {
        chmodSync(target, stats.mode & 0o7777);
        utimesSync(target, stats.atime, stats.mtime);
      });
    });
  }

  /**
   * Runs the synchronous `use` on a staged path: staging runs in a worker thread of its own
   * (stageRestoreInThread), where a synchronous call holds up only that thread and spares a round
   * trip through libuv's pool. A path too long for one call is reached through `at`.
   */
  private async atStaged<T>(rel: string, use: (target: string) => T): Promise<T> {
    const target = this.staged.direct(rel);
    if (target !== null) return use(target);
    return this.staged.at(rel, (longTarget) => Promise.resolve().then(() => use(longTarget)));
  }
}

/**
 * Runs `work` on a live subdirectory, held open by descriptor and closed afterwards. False when
 * the directory vanished or stopped being a real directory (nothing to do then).
 */
async function inSubdirectory(
  live: VolumeDir,
  name: string,
  work: (dir: VolumeDir) => Promise<void>,
): Promise<boolean> {
  const dir = await live.subdirectory(name);
  if (dir === null) return false;
  try {
    await work(dir);
    return true;
  } finally {
    await dir.close();
  }
}

async function exists(target: string): Promise<boolean> {
  return (await ignoreGoneAsync(lstat(target))) !== null;
}

/** The call's result, or null when it failed because the entry vanished or changed kind. */
function ignoreGone<T>(call: () => T): T | null {
  try {
    return call();
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

async function ignoreGoneAsync<T>(operation: Promise<T>): Promise<T | null> {
  try {
    return await operation;
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

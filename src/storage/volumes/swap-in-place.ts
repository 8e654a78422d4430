/**
 * The swap of a restore onto a volume that is a mount point (see restore-files.ts): the volume's
 * directory stays, and its entries are swapped, each by a rename within the volume's own
 * filesystem. The restored tree is staged inside the volume (`RestorePaths.inPlace`).
 */
import { lstat, mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { removeTree, syncDirectory } from '../directory-root.ts';
import type { RecoveryOutcome, RestorePaths } from './restore-paths.ts';
import { isGone } from '../volume-dir.ts';

/** The names the in-place directories have in the volume: never the user's entries. */
export function inPlaceNames(paths: RestorePaths): ReadonlySet<string> {
  const { staging, moving, retired } = paths.inPlace;
  return new Set([staging, moving, retired].map((dir) => path.basename(dir)));
}

/**
 * swapIn for a volume that is a mount point: the directory stays and its entries are swapped,
 * each by a rename within the volume's filesystem. `moving` is made (and synced) first: from then
 * on recovery finishes the swap rather than undoing it. Every live entry moves into it; it is
 * renamed `retired` once it holds them all; the staged entries move into the volume; the old ones
 * are deleted. Which of the three directories exist says, after a crash, how far the swap got.
 */
export async function swapInPlace(paths: RestorePaths): Promise<void> {
  await mkdir(paths.inPlace.moving, { mode: 0o700 });
  await syncDirectory(paths.volume);
  await finishSwapInPlace(paths);
}

/** Carries an in-place swap on from wherever it stands (see swapInPlace), to its end. */
async function finishSwapInPlace(paths: RestorePaths): Promise<void> {
  const { volume, inPlace } = paths;
  if (await exists(inPlace.moving)) {
    await moveEntries(volume, inPlace.moving, inPlaceNames(paths));
    await syncDirectory(inPlace.moving);
    await rename(inPlace.moving, inPlace.retired);
    await syncDirectory(volume);
  }
  if (await exists(inPlace.staging)) {
    await moveEntries(inPlace.staging, volume, new Set());
    await syncDirectory(volume);
    await rmdir(inPlace.staging);
  }
  await removeTree(inPlace.retired);
  await syncDirectory(volume);
}

/** Renames every entry of `from` (but those in `skipped`) to the same name in `to`. */
async function moveEntries(from: string, to: string, skipped: ReadonlySet<string>): Promise<void> {
  for (const name of await readdir(from)) {
    if (!skipped.has(name)) await rename(path.join(from, name), path.join(to, name));
  }
}

/** recoverRestore for a restore staged inside its volume (swapInPlace); null when there is none. */
export async function recoverInPlace(paths: RestorePaths): Promise<RecoveryOutcome | null> {
  const { inPlace } = paths;
  const [staging, moving, retired] = await Promise.all([
    exists(inPlace.staging),
    exists(inPlace.moving),
    exists(inPlace.retired),
  ]);
  if (moving && !staging) {
    // Not a state the swap leaves (its staging goes last): with nothing to swap in, the live
    // entries go back.
    await moveEntries(inPlace.moving, paths.volume, new Set());
    await rmdir(inPlace.moving);
    await rm(paths.report, { force: true });
    return 'rolled-back';
  }
  if (moving || retired) {
    // The swap was committed: it is finished, and its report kept.
    await finishSwapInPlace(paths);
    return 'completed';
  }
  if (staging) {
    // Never swapped in: the report goes too, and the restore starts over.
    await rm(paths.report, { force: true });
    await removeTree(inPlace.staging);
    return 'rolled-back';
  }
  return null;
}

async function exists(target: string): Promise<boolean> {
  try {
    await lstat(target);
    return true;
  } catch (err) {
    if (isGone(err)) return false;
    throw err;
  }
}

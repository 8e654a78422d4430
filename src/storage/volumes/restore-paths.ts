import path from 'node:path';

/**
 * Where one attempt at a restore keeps its trees: staged beside the live volume (or inside it,
 * for a volume that is a mount point), the retired tree, the trash and the saved report.
 */
export interface RestorePaths {
  volume: string;
  staging: string;
  retired: string;
  /** Where swapIn moves the replaced tree, to be deleted after the outcome is recorded (emptyTrash). */
  trash: string;
  /** The extraction's report, saved once staging is complete and kept until the outcome is recorded. */
  report: string;
  /** Inside the volume: where a volume that is a mount point is restored (see swapInPlace). */
  inPlace: InPlacePaths;
}

export interface InPlacePaths {
  /** The restored tree, built on the volume's own filesystem. */
  staging: string;
  /** Where the live entries go while the swap runs; its creation commits the swap. */
  moving: string;
  /** The same directory, renamed once it holds every live entry: the staged ones then move in. */
  retired: string;
}

export type RecoveryOutcome = 'clean' | 'rolled-back' | 'completed';

/**
 * The directories of one attempt at a restore job. Each attempt has its own staging and retired
 * names, so a worker that lost its job's lease can never write into, or delete, the directories
 * of the worker that took the job over.
 */
export function restorePaths(
  volumesDir: string,
  serverUuid: string,
  jobId: number,
  attempt = 1,
): RestorePaths {
  if (serverUuid === '' || serverUuid === '.' || serverUuid === '..' || /[/\0]/.test(serverUuid)) {
    throw new Error(`invalid server uuid ${JSON.stringify(serverUuid)}`);
  }
  if (!Number.isSafeInteger(jobId)) throw new Error(`invalid job id ${jobId}`);
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new Error(`invalid attempt ${attempt}`);
  const suffix = attempt === 1 ? '' : `-${attempt}`;
  const prefix = path.join(volumesDir, `.restore-${serverUuid}-${jobId}${suffix}`);
  const volume = path.join(volumesDir, serverUuid);
  const inside = path.join(volume, `.aerie-restore-${jobId}${suffix}`);
  return {
    volume,
    staging: `${prefix}.staging`,
    retired: `${prefix}.old`,
    trash: path.join(trashOf(volumesDir), `${path.basename(prefix)}.old`),
    report: `${prefix}.report.json`,
    inPlace: { staging: `${inside}.staging`, moving: `${inside}.moving`, retired: `${inside}.old` },
  };
}

/**
 * The trash of a volumes directory: trees that restores replaced, waiting to be deleted. Nothing in
 * it is ever read again; whoever empties it deletes all of it, whichever restore left it there.
 */
export function trashOf(volumesDir: string): string {
  return path.join(volumesDir, '.trash');
}

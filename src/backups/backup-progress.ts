import type { Logger } from 'pino';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { PROGRESS_INTERVAL_MS, type Progress } from '../storage/archive/archive.types.ts';
import type { BackupRef, BackupRepository } from './backup.repository.ts';
import type { BackupFormat } from './backup.ts';

export type ProgressOperation = 'backup' | 'restore';

/**
 * The phases of each operation, in the order they come. A backup walks, compresses and (to S3)
 * uploads in one stream (`archiving`); `uploading` is the end of an S3 upload, its last parts and
 * the completion of the multipart upload. A restore checks the archive (its SHA-256 and every
 * entry) on the same read that extracts it into staging (`extracting`); without `truncate` the
 * live files the backup lacks are then linked in (`merging`); `swapping` puts the staged tree in
 * place of the volume and removes the old one.
 */
export const PHASES = {
  backup: ['archiving', 'uploading'],
  restore: ['extracting', 'merging', 'swapping'],
} as const satisfies Record<ProgressOperation, readonly string[]>;

export type BackupPhase = (typeof PHASES.backup)[number];
export type RestorePhase = (typeof PHASES.restore)[number];

/** What runs on a backup now: its operation, phase, and how far it has got. */
export interface BackupProgress {
  operation: ProgressOperation;
  phase: string;
  /** Bytes of the archive: written so far by a backup, read so far by a restore. */
  bytesDone: number;
  /** The archive's size, when known: for a restore (a backup learns it only at the end). */
  bytesTotal: number | null;
  /** Files archived or restored so far. */
  filesDone: number;
  /** Files the backup holds, when known: for a restore of a backup that counted them. */
  filesTotal: number | null;
  startedAt: string;
  updatedAt: string;
}

export interface ProgressReporterDeps {
  backups: BackupRepository;
  clock: Clock;
  logger: Logger;
  /** The least time between two writes of counts (a change of phase is written at once). */
  intervalMs: number;
}

/** Where and how often progress is written: what a reporter needs beside the rows and the clock. */
export type ProgressSettings = Omit<ProgressReporterDeps, 'backups' | 'clock'>;

export interface ProgressStart {
  operation: ProgressOperation;
  phase: string;
  bytesTotal: number | null;
  filesTotal: number | null;
}

/**
 * Writes the progress of one operation onto its backup's row, for whoever watches (another
 * process, maybe). Counts come often (every 250 ms from the threads doing the work); they are
 * written at most once an interval, the latest only, never two writes at once and never waited
 * for by the work: a slow database delays the progress shown, never the job. A failed write is
 * logged (once) and the job goes on.
 */
export class ProgressReporter {
  private readonly state: BackupProgress;
  private lastWrite = Number.NEGATIVE_INFINITY;
  private dirty = true;
  private urgent = true;
  private first = true;
  /** Phases that ended before they were written: each is written, in order, before what follows. */
  private readonly unwritten: BackupProgress[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private warned = false;

  constructor(
    private readonly deps: ProgressReporterDeps,
    private readonly backup: BackupRef,
    start: ProgressStart,
  ) {
    const now = toStoredTime(deps.clock());
    this.state = { ...start, bytesDone: 0, filesDone: 0, startedAt: now, updatedAt: now };
    this.schedule();
  }

  /** When the operation started, as its row shows it. */
  get startedAt(): string {
    return this.state.startedAt;
  }

  /** The latest counts (and a new phase, if `phase` differs); counts are written within an interval. */
  report(done: { bytes?: number; files?: number }, phase?: string): void {
    if (phase !== undefined && phase !== this.state.phase) {
      if (this.urgent) this.unwritten.push({ ...this.state });
      this.state.phase = phase;
      this.urgent = true;
    }
    if (done.bytes !== undefined) this.state.bytesDone = done.bytes;
    if (done.files !== undefined) this.state.filesDone = done.files;
    // A total known beforehand can be an estimate (a snapshot backup counts against the last
    // snapshot's totals, and the volume may have grown since): it never shows less than is done.
    const { bytesTotal, filesTotal } = this.state;
    if (bytesTotal !== null) this.state.bytesTotal = Math.max(bytesTotal, this.state.bytesDone);
    if (filesTotal !== null) this.state.filesTotal = Math.max(filesTotal, this.state.filesDone);
    this.dirty = true;
    this.schedule();
  }

  /** A new phase, written as soon as the write in flight (if any) has ended. */
  phase(phase: string): void {
    this.report({}, phase);
  }

  /**
   * Writes nothing more, except phases not yet written (every phase reaches the row, in order);
   * resolves once the last write has ended.
   */
  async stop(): Promise<void> {
    const phasesPending = !this.stopped;
    await this.halt();
    while (phasesPending && (this.urgent || this.unwritten.length > 0)) {
      this.write();
      await this.writing;
    }
  }

  /** Stops, then shows on the row that this operation no longer runs (unless another replaced it). */
  async clear(): Promise<void> {
    await this.halt();
    try {
      await this.deps.backups.clearProgress(this.backup, this.state.startedAt);
    } catch (error) {
      this.warn(error);
    }
  }

  private async halt(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
  }

  private schedule(): void {
    if (this.stopped || this.writing !== undefined || this.timer !== undefined || !this.dirty) return;
    const wait =
      this.urgent || this.unwritten.length > 0
        ? 0
        : Math.max(0, this.lastWrite + this.deps.intervalMs - performance.now());
    if (wait === 0) {
      this.write();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, wait);
    this.timer.unref();
  }

  private write(): void {
    // An ended phase not yet written goes first; the current state stays to be written after it.
    const ended = this.unwritten.shift();
    if (ended === undefined) {
      this.dirty = false;
      this.urgent = false;
    }
    this.lastWrite = performance.now();
    const progress = ended ?? this.state;
    progress.updatedAt = toStoredTime(this.deps.clock());
    // The first write starts the operation on the row; later ones only continue it.
    const onlyIfStarted = this.first ? null : this.state.startedAt;
    this.first = false;
    this.writing = this.deps.backups
      .writeProgress(this.backup, { ...progress }, onlyIfStarted)
      .then(
        () => undefined,
        (error: unknown) => {
          this.warn(error);
          this.first = onlyIfStarted === null; // the start was not written: try it again
          this.dirty = true; // tried again an interval later
        },
      )
      .finally(() => {
        this.writing = undefined;
        this.schedule();
      });
  }

  private warn(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.deps.logger.warn({ err: error, backup: this.backup.id }, 'could not write the progress of a job');
  }
}

/**
 * How often the thread doing a job's work reports: every 250 ms, or as often as progress is
 * written when that is more often (tests), so that each write has fresh counts.
 */
export function threadProgressInterval(writeIntervalMs: number): number {
  return Math.min(PROGRESS_INTERVAL_MS, writeIntervalMs);
}

/**
 * A thread's report as a job's progress counts it, in the unit of the backup's `bytes` (what its
 * totals are): an archive counts the bytes of the archive written or read; a snapshot counts the
 * bytes of the files it covers (a file unchanged since the last snapshot counts whole, unread).
 */
export function toCounts(progress: Progress, format: BackupFormat): { bytes?: number; files: number } {
  if (format === 'snapshot') return { files: progress.files, bytes: progress.bytes };
  return {
    files: progress.files,
    ...(progress.archiveBytes === undefined ? {} : { bytes: progress.archiveBytes }),
  };
}

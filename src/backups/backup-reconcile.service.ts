import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { PROBE_DIRECTORY, type StoredEntry } from '../storage/stores/archive-layout.ts';
import type { BackupStorage } from '../storage/stores/backup-storage.ts';
import type { BackupDeletion, BackupDeletionRepository } from './backup-deletion.repository.ts';
import type { BackupRepository, BackupState } from './backup.repository.ts';
import type { ReconcileRepository } from './reconcile.repository.ts';

/** Nothing written more recently than this is removed, unless a run is given another period. */
export const DEFAULT_GRACE_MS = 60 * 60_000;
/** A deletion is remembered this long at most, however much of its backup is still stored. */
const DELETION_RECORD_DAYS = 30;
const STATES_PER_READ = 1000;
const DAY_MS = 24 * 3600_000;

/**
 * Why a stored entry is a leftover: its backup was deleted (a deletion is recorded), failed, or
 * is finished (a scratch file or upload beside its archive); it is the readiness probe's; it is a
 * scratch file or upload no backup owns (never an archive); or `unknown`, an archive no backup
 * owns with no deletion recorded, which is removed only when asked.
 */
export type LeftoverReason =
  'backup-deleted' | 'backup-failed' | 'backup-finished' | 'probe' | 'no-backup' | 'unknown';

export interface Leftover {
  disk: string;
  kind: StoredEntry['kind'];
  server: string;
  backup: string;
  location: string;
  bytes: number | null;
  reason: LeftoverReason;
}

export interface BackupNamed {
  uuid: string;
  server: string;
  name: string;
  disk: string;
}

export interface ReconcileReport {
  dryRun: boolean;
  graceMinutes: number;
  /** The stores taken stock of, by disk. */
  disks: string[];
  /** What is garbage (with `removeUnknown`, the unknown archives too), removed (on a dry run: would be). */
  removed: Leftover[];
  /**
   * Archives no backup owns whose deletion is not recorded, left alone: they may be real backups
   * whose rows are missing (a database restored from an older dump). Empty with `removeUnknown`,
   * which puts them in `removed`.
   */
  unknown: Leftover[];
  /** Backups shown in progress that nothing makes any more, marked failed (on a dry run: would be). */
  stalled: BackupNamed[];
  /** Successful backups whose archive is not in their store: reported, never changed. */
  missing: BackupNamed[];
  /** Leftovers left alone because they were written within the grace period. */
  recent: number;
  /** Entries left alone because they are under a server this database does not know. */
  foreign: number;
  /** Leftovers that could not be removed (they are tried again next time). */
  errors: { disk: string; location: string; error: string }[];
  /**
   * Records of deleted backups dropped (on a dry run: would be): nothing of the backup is left in
   * storage, or the record is older than 30 days.
   */
  deletionsForgotten: number;
}

export interface ReconcileOptions {
  /** Lists what would be done, and does nothing. */
  dryRun?: boolean;
  /** Nothing written more recently than this is removed, and no backup with a sign of life since is marked failed. */
  graceMs?: number;
  /**
   * Removes the unknown archives too (see `ReconcileReport.unknown`): only once an operator knows
   * they are not backups of a restored database. Never set by the retention job.
   */
  removeUnknown?: boolean;
}

export interface BackupReconcileDeps {
  backups: BackupRepository;
  deletions: BackupDeletionRepository;
  reconcile: ReconcileRepository;
  /** Every store this process can reach: the local directory, and the bucket when one is set. */
  stores: readonly BackupStorage[];
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
}

/**
 * Brings backup storage and the backups table back into agreement (`aerie backup reconcile`, and
 * the retention job every hour): removes what the stores hold that is provably garbage, marks
 * failed the backups that nothing is making any more, and names the successful backups whose
 * archive is missing and the archives no backup owns.
 *
 * The rule that makes it safe beside backups being made: a backup's row is written before any
 * byte of its archive (through the API, the row and its job are one transaction; from the
 * command line, the row comes first too), and the stores are listed before the rows (and the
 * deletions) are read. So an entry of a backup still in progress is never touched, however old:
 * only once that backup is finished (its upload completed or given up) or marked failed here is
 * what it left removed. On top of that, nothing written within the grace period (an hour) is
 * removed, and nothing under a server this database does not know (a bucket shared with another
 * deployment, or a database that is not this deployment's): only `.ready/`, the readiness
 * probe's, is Aerie's without a server.
 *
 * An archive whose backup has no row is removed only when the deletion of that backup is recorded
 * (`backup_deletions`, written with the row's delete). Without the record it is "unknown", and
 * only reported: the database may have been restored from a dump older than the backup, and the
 * archive may be the only copy of it. The operator removes those with `removeUnknown`. Scratch
 * files and unfinished uploads are never a backup, and go whether or not a row owns them. A
 * deletion's record is dropped once nothing of its backup is listed any more (or after 30 days,
 * leaving what is still stored to be reported as unknown).
 *
 * A backup in progress is "stalled" when no job is queued or running for it and its row has
 * shown no sign of life (progress, written at least every minute by whatever makes it) for the
 * grace period: the process making it died. It is marked failed, with a `server:backup.fail`
 * entry, so that it can be deleted, and what it left is removed. A missing archive is only
 * reported: a store that is briefly unreachable, or a backup directory not mounted, must never
 * turn every backup into a failure.
 */
export class BackupReconcileService {
  constructor(private readonly deps: BackupReconcileDeps) {}

  async run(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    const { stores, clock } = this.deps;
    const dryRun = options.dryRun ?? false;
    const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    const started = clock().getTime();
    const cutoff = started - graceMs;
    // The stores first, then the rows (see above).
    const listed = await Promise.all(
      stores.map(async (store) => ({ store, entries: await store.inventory() })),
    );
    const states = await this.allStates();
    // After the rows: a row read missing was deleted before the read, with its record.
    const deletions = await this.deps.deletions.all();
    const deleted = new Map(deletions.map((deletion) => [deletion.backupId, deletion]));
    const servers = await this.deps.reconcile.serverIds();
    const beingMade = await this.deps.reconcile.backupsBeingMade();
    const report: ReconcileReport = {
      dryRun,
      graceMinutes: graceMs / 60_000,
      disks: stores.map((store) => store.disk),
      removed: [],
      unknown: [],
      stalled: [],
      missing: [],
      recent: 0,
      foreign: 0,
      errors: [],
      deletionsForgotten: 0,
    };

    for (const state of states.values()) {
      if (state.completedAt !== null || beingMade.has(state.id)) continue;
      if (Date.parse(state.lastSignOfLife) >= cutoff) continue;
      if (!dryRun && !(await this.markStalled(state, toStoredTime(new Date(cutoff))))) continue;
      report.stalled.push(named(state));
      states.set(state.id, { ...state, completedAt: toStoredTime(clock()), isSuccessful: false });
    }

    const gone = new Set<string>();
    for (const { store, entries } of listed) {
      const leftovers: { entry: StoredEntry; item: Leftover }[] = [];
      for (const entry of entries) {
        if (entry.serverId !== PROBE_DIRECTORY && !servers.has(entry.serverId)) {
          report.foreign += 1;
          continue;
        }
        const state = states.get(entry.backupId);
        const deletion = deleted.get(entry.backupId);
        const reason = leftoverReason(
          entry,
          state?.serverId === entry.serverId ? state : undefined,
          deletion?.serverId === entry.serverId ? deletion : undefined,
        );
        if (reason === undefined) continue;
        if (entry.modifiedAt.getTime() > cutoff) {
          report.recent += 1;
          continue;
        }
        const item = toLeftover(store.disk, entry, reason);
        if (reason === 'unknown' && options.removeUnknown !== true) report.unknown.push(item);
        else leftovers.push({ entry, item });
      }
      const failures = dryRun ? [] : await store.remove(leftovers.map((l) => l.entry));
      // Matched by what they name: a store that works in a thread hands back copies.
      const failed = new Set(failures.map((f) => entryKey(f.entry)));
      for (const { entry, error } of failures)
        report.errors.push({ disk: store.disk, location: entry.location, error });
      for (const leftover of leftovers) {
        if (failed.has(entryKey(leftover.entry))) continue;
        report.removed.push(leftover.item);
        gone.add(`${store.disk} ${entryKey(leftover.entry)}`);
      }
    }
    // The backups something is still stored for once this run is done (on a dry run: would be).
    const held = new Set(
      listed.flatMap(({ store, entries }) =>
        entries.filter((e) => !gone.has(`${store.disk} ${entryKey(e)}`)).map((e) => e.backupId),
      ),
    );
    report.deletionsForgotten = await this.forgetDeletions(deletions, held, report.disks, cutoff, dryRun);

    for (const { store, entries } of listed) {
      const archives = new Set(
        entries.filter((e) => e.kind === 'archive').map((e) => `${e.serverId}/${e.backupId}`),
      );
      for (const state of states.values()) {
        if (state.disk !== store.disk || !state.isSuccessful || state.completedAt === null) continue;
        // Finished after the listing began: its archive may have come after the listing.
        if (Date.parse(state.completedAt) >= started) continue;
        if (!archives.has(`${state.serverId}/${state.id}`)) report.missing.push(named(state));
      }
    }
    return report;
  }

  /**
   * Drops the records of deleted backups nothing is stored for any more, and those older than 30
   * days. Only records written before the grace period began, so before the stores were listed,
   * and only those of a store listed: a listing that did not show what was stored for a backup
   * must not make its archive unknown.
   */
  private async forgetDeletions(
    deletions: readonly BackupDeletion[],
    held: ReadonlySet<string>,
    disks: readonly string[],
    cutoff: number,
    dryRun: boolean,
  ): Promise<number> {
    const expired = this.deps.clock().getTime() - DELETION_RECORD_DAYS * DAY_MS;
    const done = deletions.filter(
      (d) => disks.includes(d.disk) && !held.has(d.backupId) && Date.parse(d.deletedAt) < cutoff,
    );
    if (dryRun) {
      const old = deletions.filter((d) => !done.includes(d) && Date.parse(d.deletedAt) < expired);
      return done.length + old.length;
    }
    const forgotten = await this.deps.deletions.forget(done.map((d) => d.backupId));
    return forgotten + (await this.deps.deletions.forgetBefore(toStoredTime(new Date(expired))));
  }

  /** Every backup's state, by id, read a thousand at a time. */
  private async allStates(): Promise<Map<string, BackupState>> {
    const states = new Map<string, BackupState>();
    let after = '';
    for (;;) {
      const page = await this.deps.backups.statesAfter(after, STATES_PER_READ);
      for (const state of page) states.set(state.id, state);
      if (page.length < STATES_PER_READ) return states;
      after = page[page.length - 1]!.id;
    }
  }

  /** Marks a stalled backup failed, with its entry; false when it showed a sign of life meanwhile. */
  private markStalled(state: BackupState, before: string): Promise<boolean> {
    const { backups, activity, transaction, clock } = this.deps;
    return transaction(async (trx) => {
      if (
        !(await backups.markStalled(
          { id: state.id, serverId: state.serverId },
          before,
          toStoredTime(clock()),
          trx,
        ))
      )
        return false;
      await activity.record(
        { batch: randomUUID(), ip: null, userAgent: 'aerie' },
        {
          event: 'server:backup.fail',
          actor: null,
          properties: { name: state.name, reason: 'the backup stopped before it was finished' },
          subjects: [
            { type: 'server', id: state.serverId },
            { type: 'backup', id: state.id },
          ],
        },
        trx,
      );
      this.deps.logger.warn(
        { backup: state.id },
        'a backup that stopped before it was finished was marked failed',
      );
      return true;
    });
  }
}

/**
 * Why `entry` is a leftover, or undefined when a backup owns it: a backup in progress owns
 * everything stored for it; a successful one, its archive; a failed one, nothing. Of a backup
 * with no row, an archive is garbage only when its deletion is recorded (else `unknown`).
 */
function leftoverReason(
  entry: StoredEntry,
  owner: BackupState | undefined,
  deletion: BackupDeletion | undefined,
): LeftoverReason | undefined {
  if (owner === undefined) {
    if (deletion !== undefined) return 'backup-deleted';
    if (entry.serverId === PROBE_DIRECTORY) return 'probe';
    return entry.kind === 'archive' ? 'unknown' : 'no-backup';
  }
  if (owner.completedAt === null) return undefined;
  if (!owner.isSuccessful) return 'backup-failed';
  return entry.kind === 'archive' ? undefined : 'backup-finished';
}

function entryKey(entry: StoredEntry): string {
  return `${entry.kind} ${entry.location} ${entry.uploadId ?? ''}`;
}

function toLeftover(disk: string, entry: StoredEntry, reason: LeftoverReason): Leftover {
  return {
    disk,
    kind: entry.kind,
    server: entry.serverId,
    backup: entry.backupId,
    location: entry.location,
    bytes: entry.bytes,
    reason,
  };
}

function named(state: BackupState): BackupNamed {
  return { uuid: state.id, server: state.serverId, name: state.name, disk: state.disk };
}

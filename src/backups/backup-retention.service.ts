import type { Logger } from 'pino';
import type { ActivityService } from '../activity/activity.service.ts';
import type { Transactor } from '../db/executor.ts';
import type { ServerAccess } from '../servers/server-access.ts';
import type { ServerRepository } from '../servers/server.repository.ts';
import type { RequestContext } from '../shared/context.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { AuthenticatedContext } from '../users/actor.ts';
import { systemEntry, type BackupManagementService } from './backup-management.service.ts';
import type { BackupRetentionRepository, SavedRetention } from './backup-retention.repository.ts';
import type { RetentionPolicyBody, RetentionPreviewQuery } from './backup-retention.schema.ts';
import type { BackupRepository } from './backup.repository.ts';
import type { Backup } from './backup.ts';
import {
  applyRetention,
  hasRules,
  newestFirst,
  RETENTION_RULES,
  type RetentionPolicy,
} from './retention-policy.ts';

export interface BackupRetentionDeps {
  retention: BackupRetentionRepository;
  backups: BackupRepository;
  servers: ServerRepository;
  /** Deletes as a user's delete does (the record of the deletion, the archive after the commit). */
  management: BackupManagementService;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  /** The IANA zone whose hours, days, weeks, months and years the rules count (AERIE_TIMEZONE). */
  timeZone: string;
}

/** What a policy does to a server's backups: every backup, kept (and why) or deleted. */
export interface RetentionPlan {
  policy: RetentionPolicy;
  timeZone: string;
  keep: { backup: Backup; reasons: string[] }[];
  remove: Backup[];
}

/**
 * Which of a server's backups `policy` keeps: the rules (retention-policy.ts) are applied to its
 * automatic, successful backups; a backup made by hand, in progress or failed is left alone, and
 * a locked one is never deleted (it still counts as its period's backup).
 */
export function planRetention(
  backups: readonly Backup[],
  policy: RetentionPolicy,
  timeZone: string,
): RetentionPlan {
  const candidates = backups.filter((b) => b.isAutomatic && b.isSuccessful);
  const decision = applyRetention(candidates, policy, timeZone);
  const ruled = new Map(decision.keep.map((k) => [k.backup.id, k.reasons]));
  const plan: RetentionPlan = { policy, timeZone, keep: [], remove: [] };
  for (const backup of [...backups].sort(newestFirst)) {
    const reasons = !backup.isAutomatic
      ? ['made by hand']
      : !backup.isSuccessful
        ? [backup.completedAt === null ? 'in progress' : 'failed']
        : !hasRules(policy)
          ? ['no policy']
          : (ruled.get(backup.id) ?? []);
    const kept = backup.isLocked ? [...reasons, 'locked'] : reasons;
    if (kept.length > 0) plan.keep.push({ backup, reasons: kept });
    else plan.remove.push(backup);
  }
  return plan;
}

/** The policy a request body or a preview's query describes (a rule absent or null is off). */
export function policyOf(body: RetentionPolicyBody | RetentionPreviewQuery): RetentionPolicy {
  return {
    last: body.keep_last ?? null,
    hourly: body.keep_hourly ?? null,
    daily: body.keep_daily ?? null,
    weekly: body.keep_weekly ?? null,
    monthly: body.keep_monthly ?? null,
    yearly: body.keep_yearly ?? null,
  };
}

/**
 * A server's retention policy for its automatic backups: read, set, previewed, and applied each
 * time a schedule's backup succeeds.
 */
export class BackupRetentionService {
  constructor(private readonly deps: BackupRetentionDeps) {}

  get timeZone(): string {
    return this.deps.timeZone;
  }

  find(access: ServerAccess): Promise<SavedRetention> {
    return this.deps.retention.find(access.server.id);
  }

  /** Replaces the server's policy, recorded in the activity log with the rules it now has. */
  async update(
    context: AuthenticatedContext,
    access: ServerAccess,
    body: RetentionPolicyBody,
  ): Promise<SavedRetention> {
    const { retention, servers, activity, transaction, clock } = this.deps;
    const policy = policyOf(body);
    const now = toStoredTime(clock());
    await transaction(async (trx) => {
      await servers.lock(access.server.id, trx);
      await retention.save(access.server.id, policy, now, trx);
      await activity.record(
        context,
        {
          event: 'server:backup.retention.update',
          actor: context.actor,
          properties: Object.fromEntries(RETENTION_RULES.map((rule) => [`keep_${rule}`, policy[rule]])),
          subjects: [{ type: 'server', id: access.server.id }],
        },
        trx,
      );
    });
    return { policy, updatedAt: now };
  }

  /**
   * What the saved policy (or, with any rule in `query`, the policy the query describes) would
   * keep and delete if it were applied now. Nothing is changed.
   */
  async preview(access: ServerAccess, query: RetentionPreviewQuery): Promise<RetentionPlan> {
    const proposed = RETENTION_RULES.some((rule) => query[`keep_${rule}`] !== undefined);
    const policy = proposed ? policyOf(query) : (await this.find(access)).policy;
    const backups = await this.deps.backups.allOfServer(access.server.id);
    return planRetention(backups, policy, this.deps.timeZone);
  }

  /**
   * Applies the server's policy after one of its automatic backups succeeded: each backup it does
   * not keep is deleted as a user's delete is (with the record of its deletion and an activity
   * entry naming the policy), under the server's row, then its archive. Skipped while the server
   * restores (the next automatic backup applies it). Never throws: the backup it follows is made
   * either way, so a failure here is logged, and the next run tries again.
   */
  async applyAfterBackup(serverId: string, context: RequestContext): Promise<void> {
    const { retention, backups, servers, management, transaction, logger } = this.deps;
    try {
      const deleted = await transaction(async (trx) => {
        await servers.lock(serverId, trx);
        const { policy } = await retention.find(serverId, trx);
        if (!hasRules(policy)) return [];
        const server = await servers.findByReference(serverId, trx);
        if (server === undefined || server.status === 'restoring_backup') return [];
        const plan = planRetention(await backups.allOfServer(serverId, trx), policy, this.deps.timeZone);
        const removed: Backup[] = [];
        for (const backup of plan.remove) {
          removed.push(
            await management.deleteHeld(context, serverId, backup.id, trx, (current) =>
              systemEntry('server:backup.delete', current, { retention: true }),
            ),
          );
        }
        return removed;
      });
      for (const backup of deleted) await management.removeArchive(backup);
      // The chunks only the deleted snapshots used are reclaimed now, not at the next prune.
      await management.pruneAfterDelete(deleted);
    } catch (error) {
      logger.warn({ err: error, server: serverId }, 'could not apply the backup retention policy');
    }
  }
}

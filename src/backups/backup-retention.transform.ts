import { toWireTime } from '../shared/time.ts';
import type { SavedRetention } from './backup-retention.repository.ts';
import type { RetentionPolicyResource, RetentionPreview } from './backup-retention.schema.ts';
import type { RetentionPlan } from './backup-retention.service.ts';
import type { Backup } from './backup.ts';
import { keepFieldsOf } from './retention-policy.ts';

export function toRetentionPolicyResource(saved: SavedRetention, timeZone: string): RetentionPolicyResource {
  return {
    object: 'backup_retention_policy',
    attributes: {
      ...keepFieldsOf(saved.policy),
      time_zone: timeZone,
      updated_at: toWireTime(saved.updatedAt),
    },
  };
}

function previewEntry(backup: Backup, reasons: string[]) {
  return {
    uuid: backup.id,
    name: backup.name,
    created_at: toWireTime(backup.createdAt),
    is_automatic: backup.isAutomatic,
    is_locked: backup.isLocked,
    reasons,
  };
}

export function toRetentionPreview(plan: RetentionPlan): RetentionPreview {
  return {
    object: 'backup_retention_preview',
    attributes: {
      ...keepFieldsOf(plan.policy),
      time_zone: plan.timeZone,
      keep: plan.keep.map(({ backup, reasons }) => previewEntry(backup, reasons)),
      delete: plan.remove.map((backup) => previewEntry(backup, [])),
    },
  };
}

import type { BackupSummary } from '../backups/backup-summary.ts';
import { toWireTime } from '../shared/time.ts';
import type { User } from '../users/user.ts';
import type { ListedServer } from './server-query.service.ts';
import type { Account, BackupSummaryResource, ServerResource } from './server.schema.ts';

export function toServerResource(
  { server, permissions, backups }: ListedServer,
  viewer: User,
): ServerResource {
  const owner = server.owner_id === viewer.id;
  return {
    object: 'server',
    attributes: {
      server_owner: owner,
      identifier: server.identifier,
      uuid: server.id,
      name: server.name,
      description: server.description,
      status: server.status,
      is_suspended: server.status === 'suspended',
      is_installing: server.status === 'installing',
      is_transferring: server.status === 'transferring',
      limits: {
        memory: 0,
        swap: 0,
        disk: server.disk_mb,
        io: 500,
        cpu: 0,
        threads: null,
        oom_disabled: true,
      },
      feature_limits: { databases: 0, allocations: 0, backups: server.backup_limit },
    },
    meta: {
      is_server_owner: owner,
      user_permissions: permissions === 'all' ? ['*'] : [...permissions],
      backup_summary: backups === null ? null : toBackupSummaryResource(backups),
    },
  };
}

function toBackupSummaryResource(summary: BackupSummary): BackupSummaryResource {
  return {
    count: summary.count,
    bytes: summary.bytes,
    last_successful_at: toWireTime(summary.lastSuccessfulAt),
    last_failed_at: toWireTime(summary.lastFailedAt),
    warnings: [...summary.warnings],
  };
}

export function toAccount(user: User): Account {
  return {
    object: 'user',
    attributes: {
      id: user.number,
      uuid: user.id,
      admin: user.rootAdmin,
      username: user.username,
      email: user.email,
      first_name: user.firstName,
      last_name: user.lastName,
      language: user.language,
      use_totp: user.useTotp,
    },
  };
}

import type {
  ActivityFeedCountTable,
  ActivityLogSubjectTable,
  ActivityLogTable,
} from '../activity/activity.table.ts';
import type { ApiKeyTable } from '../api-keys/api-key.table.ts';
import type { JobTable } from '../jobs/job.table.ts';
import type { SessionTable } from '../auth/session.table.ts';
import type { LoginCheckpointTable, RecoveryTokenTable } from '../auth/two-factor.table.ts';
import type {
  BackupDeletionTable,
  BackupRepositoryLockTable,
  BackupRetentionTable,
  BackupTable,
} from '../backups/backup.table.ts';
import type { ScheduleTable, ScheduleTaskTable } from '../schedules/schedule.table.ts';
import type { ServerTable, SubuserTable } from '../servers/server.table.ts';
import type { UserNumberTable, UserTable } from '../users/user.table.ts';

export interface Database {
  users: UserTable;
  user_numbers: UserNumberTable;
  sessions: SessionTable;
  recovery_tokens: RecoveryTokenTable;
  login_checkpoints: LoginCheckpointTable;
  api_keys: ApiKeyTable;
  activity_logs: ActivityLogTable;
  activity_log_subjects: ActivityLogSubjectTable;
  activity_feed_counts: ActivityFeedCountTable;
  servers: ServerTable;
  subusers: SubuserTable;
  backups: BackupTable;
  backup_deletions: BackupDeletionTable;
  backup_retention: BackupRetentionTable;
  backup_repository_locks: BackupRepositoryLockTable;
  jobs: JobTable;
  schedules: ScheduleTable;
  schedule_tasks: ScheduleTaskTable;
}

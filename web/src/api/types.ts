/**
 * The shapes of the client API the panel reads (see the README's API table), taken from the
 * types generated from the server's OpenAPI document (openapi.gen.ts; regenerate it with
 * `node --import tsx scripts/api-types.ts`). No wire shape is written here by hand: when a
 * route's schema changes, the regenerated file changes these, and the compiler says what breaks.
 */
import type { paths } from './openapi.gen.ts';

/** The JSON body of an operation's 200 answer (a compile error if it has none). */
type Ok<Operation extends { responses: { 200: { content: { 'application/json': unknown } } } }> =
  Operation['responses'][200]['content']['application/json'];

/** The activity feeds the panel reads: the caller's, and a server's. */
type ActivityList =
  Ok<paths['/api/client/activity']['get']> | Ok<paths['/api/client/servers/{server}/activity']['get']>;

export type ActivityLog = ActivityList['data'][number];

export type Pagination = Ok<paths['/api/client/activity']['get']>['meta']['pagination'];

/** A user as an activity entry names its actor: the attributes every user payload carries. */
export type UserAttributes = Extract<ActivityLog['relationships']['actor'], { object: 'user' }>['attributes'];

export type Account = Ok<paths['/api/client/account']['get']>;

export type ApiKey = Ok<paths['/api/client/account/api-keys']['get']>['data'][number];

/** A key just created: the only answer that carries its secret. */
export type CreatedApiKey = Ok<paths['/api/client/account/api-keys']['post']>;

export type Server = Ok<paths['/api/client/servers/{server}']['get']>;

/** null when idle; otherwise what the server is busy with (`restoring_backup`, `installing`, …). */
export type ServerStatus = Server['attributes']['status'];

/** A server's backups summed up (null in `meta` for a caller who may not read them). */
export type BackupSummary = NonNullable<Server['meta']['backup_summary']>;

export type Backup = Ok<paths['/api/client/servers/{server}/backups/{backup}']['get']>;

export type BackupAttributes = Backup['attributes'];

/** What a backup's job is doing now (a backup being made, or a restore of it). */
export type Progress = NonNullable<BackupAttributes['progress']>;

export type Subuser = Ok<paths['/api/client/servers/{server}/users/{user}']['get']>;

/** A schedule, with its tasks (`attributes.relationships.tasks`). */
export type Schedule = Ok<paths['/api/client/servers/{server}/schedules/{schedule}']['get']>;

export type ScheduleAttributes = Schedule['attributes'];

export type ScheduleTask = ScheduleAttributes['relationships']['tasks']['data'][number];

/** A server's retention policy for its automatic backups. */
export type RetentionPolicy = Ok<paths['/api/client/servers/{server}/backups/retention']['get']>;

/** What a policy would keep (and why) and delete now. */
export type RetentionPreview = Ok<paths['/api/client/servers/{server}/backups/retention/preview']['get']>;

/** What a bulk delete did: the backups deleted, and those refused with the reason. */
export type BulkDeleteResult = Ok<paths['/api/client/servers/{server}/backups/delete']['post']>;

export type LoginResponse = Ok<paths['/auth/login']['post']>;

export type TwoFactorSetup = Ok<paths['/api/client/account/two-factor']['get']>;

export type RecoveryTokens = Ok<paths['/api/client/account/two-factor']['post']>;

/** The list answers, by the `object` of their items. */
interface Lists {
  activity_log: ActivityList;
  api_key: Ok<paths['/api/client/account/api-keys']['get']>;
  server: Ok<paths['/api/client']['get']>;
  backup: Ok<paths['/api/client/servers/{server}/backups']['get']>;
  server_subuser: Ok<paths['/api/client/servers/{server}/users']['get']>;
  server_schedule: Ok<paths['/api/client/servers/{server}/schedules']['get']>;
}

/** The list answer whose items are `T`s (`List<Backup>`: a server's backups, with their meta). */
export type List<T extends { object: keyof Lists }> = Lists[T['object']];

/**
 * Every event Aerie records, with the sentence that describes it. `uses` lists the properties
 * the sentence already shows; any other property is "additional metadata".
 */
type Properties = Record<string, unknown>;

interface EventDefinition {
  describe: (p: Properties) => string;
  uses: readonly string[];
}

const text = (value: unknown): string =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : '';

/** "1 file", "2 files": a count with its noun in the number it takes. */
const count = (n: number, one: string, other = `${one}s`): string => `${n} ${n === 1 ? one : other}`;

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

/**
 * What a finished restore wrote, when it is known: " (49 files)", and the links and special files
 * it would not create (" (49 files, 2 links or special files skipped)"). A restore completed by
 * crash recovery without its report knows neither.
 */
function restoredCounts(p: Properties): string {
  const parts: string[] = [];
  if (isCount(p.files)) parts.push(count(p.files, 'file'));
  if (isCount(p.skipped_count) && p.skipped_count > 0)
    parts.push(`${count(p.skipped_count, 'link or special file', 'links or special files')} skipped`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

/** " (schedule nightly)": the schedule that did it, for entries a schedule wrote. */
const bySchedule = (p: Properties): string =>
  typeof p.schedule_name === 'string' ? ` (schedule ${p.schedule_name})` : '';

/** The rules of a backup retention policy, as the policy change's entry holds them. */
const RETENTION_RULES = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;

/** "keep last 3, daily 7", or that no rule is left. */
function retentionPolicy(p: Properties): string {
  const rules = RETENTION_RULES.flatMap((rule) =>
    isCount(p[`keep_${rule}`]) ? [`${rule} ${text(p[`keep_${rule}`])}`] : [],
  );
  return rules.length === 0
    ? 'Removed the backup retention policy'
    : `Set the backup retention policy to keep ${rules.join(', ')}`;
}

/** Why a backup was deleted, when a user did not delete it by hand. */
function deletedBecause(p: Properties): string {
  if (p.rotated === true) return ` to make room under the backup limit${bySchedule(p)}`;
  if (p.retention === true) return ' by the retention policy';
  return '';
}

const EVENTS = {
  'auth:login': { describe: () => 'Logged in', uses: [] },
  'auth:fail': {
    describe: (p) =>
      p.two_factor === true
        ? `Failed two-factor authentication${p.username ? ` as ${text(p.username)}` : ''}`
        : `Failed to log in as ${text(p.username)}`,
    uses: ['username', 'two_factor'],
  },
  'auth:checkpoint': { describe: () => 'Two-factor authentication requested', uses: [] },
  'auth:token': { describe: () => 'Solved the two-factor challenge', uses: [] },
  'auth:recovery-token': { describe: () => 'Used a two-factor recovery token', uses: [] },
  'auth:logout': { describe: () => 'Logged out', uses: [] },
  'auth:ip-blocked': {
    describe: (p) => `Refused API key ${text(p.identifier)} from an address it does not allow`,
    uses: ['identifier'],
  },
  'user:account.email-changed': {
    describe: (p) => `Changed email from ${text(p.old)} to ${text(p.new)}`,
    uses: ['old', 'new'],
  },
  'user:account.password-changed': { describe: () => 'Changed password', uses: [] },
  'user:two-factor.create': { describe: () => 'Enabled two-factor authentication', uses: [] },
  'user:two-factor.delete': { describe: () => 'Disabled two-factor authentication', uses: [] },
  'user:api-key.create': { describe: (p) => `Created API key ${text(p.identifier)}`, uses: ['identifier'] },
  'user:api-key.delete': { describe: (p) => `Deleted API key ${text(p.identifier)}`, uses: ['identifier'] },
  'server:backup.start': {
    describe: (p) => `Started backup ${text(p.name)}${bySchedule(p)}`,
    uses: ['name', 'schedule_name'],
  },
  'server:backup.complete': {
    describe: (p) =>
      `Completed backup ${text(p.name)}` +
      (p.restore_of === undefined ? '' : ` of the files as they were before restoring ${text(p.restore_of)}`),
    uses: ['name', 'restore_of'],
  },
  'server:backup.fail': {
    describe: (p) => `Backup ${text(p.name)}${bySchedule(p)} failed: ${text(p.reason)}`,
    uses: ['name', 'reason', 'schedule_name'],
  },
  'server:backup.delete': {
    describe: (p) => `Deleted backup ${text(p.name)}${deletedBecause(p)}`,
    uses: ['name', 'rotated', 'retention', 'schedule_name'],
  },
  'server:backup.retention.update': {
    describe: retentionPolicy,
    uses: RETENTION_RULES.map((rule) => `keep_${rule}`),
  },
  'server:backup.lock': { describe: (p) => `Locked backup ${text(p.name)}`, uses: ['name'] },
  'server:backup.unlock': { describe: (p) => `Unlocked backup ${text(p.name)}`, uses: ['name'] },
  'server:backup.download': { describe: (p) => `Downloaded backup ${text(p.name)}`, uses: ['name'] },
  // A restore is recorded when it is asked for, and runs in the background: its request only
  // starts it. Its end is one of the two events after it, the same batch.
  'server:backup.restore': {
    describe: (p) =>
      `Started restoring backup ${text(p.name)}${p.truncate === true ? ' (files deleted first)' : ''}`,
    uses: ['name', 'truncate'],
  },
  'server:backup.restore-complete': {
    describe: (p) => `Finished restoring backup ${text(p.name)}${restoredCounts(p)}`,
    uses: ['name', 'files', 'skipped_count'],
  },
  'server:backup.restore-failed': {
    describe: (p) => `Failed to restore backup ${text(p.name)}: ${text(p.reason)}`,
    uses: ['name', 'reason'],
  },
  'server:subuser.create': { describe: (p) => `Added ${text(p.email)} as a subuser`, uses: ['email'] },
  'server:subuser.update': {
    describe: (p) => `Changed the permissions of subuser ${text(p.email)}`,
    uses: ['email'],
  },
  'server:subuser.delete': { describe: (p) => `Removed ${text(p.email)} as a subuser`, uses: ['email'] },
  // Schedules, with Pterodactyl's properties: the schedule's name, and for tasks the action and
  // its payload (a backup task's ignored files: additional metadata).
  'server:schedule.create': { describe: (p) => `Created schedule ${text(p.name)}`, uses: ['name'] },
  'server:schedule.update': {
    describe: (p) => `Updated schedule ${text(p.name)} (${p.active === true ? 'active' : 'inactive'})`,
    uses: ['name', 'active'],
  },
  'server:schedule.delete': { describe: (p) => `Deleted schedule ${text(p.name)}`, uses: ['name'] },
  'server:schedule.execute': { describe: (p) => `Ran schedule ${text(p.name)} by hand`, uses: ['name'] },
  'server:task.create': {
    describe: (p) => `Added a ${text(p.action)} task to schedule ${text(p.name)}`,
    uses: ['name', 'action'],
  },
  'server:task.update': {
    describe: (p) => `Changed a ${text(p.action)} task of schedule ${text(p.name)}`,
    uses: ['name', 'action'],
  },
  'server:task.delete': { describe: (p) => `Removed a task from schedule ${text(p.name)}`, uses: ['name'] },
} satisfies Record<string, EventDefinition>;

export type ActivityEvent = keyof typeof EVENTS;

/** Properties never counted as additional metadata: they are part of every request's trail. */
const ALWAYS_SHOWN = new Set(['ip', 'useragent']);

export function describeEvent(event: string, properties: Properties): string {
  const definition = (EVENTS as Record<string, EventDefinition>)[event];
  return definition ? definition.describe(properties) : event;
}

export function hasAdditionalMetadata(event: string, properties: Properties): boolean {
  const uses = (EVENTS as Record<string, EventDefinition>)[event]?.uses ?? [];
  return Object.keys(properties).some((key) => !uses.includes(key) && !ALWAYS_SHOWN.has(key));
}

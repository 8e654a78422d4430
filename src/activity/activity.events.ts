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
  'server:backup.start': { describe: (p) => `Started backup ${text(p.name)}`, uses: ['name'] },
  'server:backup.complete': { describe: (p) => `Completed backup ${text(p.name)}`, uses: ['name'] },
  'server:backup.fail': {
    describe: (p) => `Backup ${text(p.name)} failed: ${text(p.reason)}`,
    uses: ['name', 'reason'],
  },
  'server:backup.delete': { describe: (p) => `Deleted backup ${text(p.name)}`, uses: ['name'] },
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

/** Subuser permissions, as the API names them, with what each allows. */
export const PERMISSIONS: { group: string; items: { name: string; label: string }[] }[] = [
  { group: 'Activity', items: [{ name: 'activity.read', label: 'See the server’s activity' }] },
  {
    group: 'Backups',
    items: [
      { name: 'backup.read', label: 'See backups' },
      { name: 'backup.create', label: 'Make backups' },
      { name: 'backup.delete', label: 'Delete, lock and unlock backups' },
      { name: 'backup.download', label: 'Download backups' },
      { name: 'backup.restore', label: 'Restore backups' },
    ],
  },
  {
    group: 'Schedules',
    items: [
      { name: 'schedule.read', label: 'See schedules' },
      { name: 'schedule.create', label: 'Create schedules' },
      { name: 'schedule.update', label: 'Change schedules and their tasks, and run them now' },
      { name: 'schedule.delete', label: 'Delete schedules' },
    ],
  },
  {
    group: 'Subusers',
    items: [
      { name: 'user.read', label: 'See subusers' },
      { name: 'user.create', label: 'Add subusers' },
      { name: 'user.update', label: 'Change subusers’ permissions' },
      { name: 'user.delete', label: 'Remove subusers' },
    ],
  },
];

/** What the caller may do on a server, from `meta.user_permissions` (`*`: everything). */
export type Can = (permission: string) => boolean;

export function permissionsOf(granted: readonly string[]): Can {
  return (permission) => granted.includes('*') || granted.includes(permission);
}

const ORDER = PERMISSIONS.flatMap((group) => group.items.map((item) => item.name));

/** Permissions in the order the panel lists them (unknown ones last, as they came). */
export function sortPermissions(permissions: readonly string[]): string[] {
  const rank = (name: string) => {
    const index = ORDER.indexOf(name);
    return index === -1 ? ORDER.length : index;
  };
  return [...permissions].sort((a, b) => rank(a) - rank(b));
}

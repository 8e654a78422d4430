/** What a subuser may be allowed to do on a server. Owners and administrators may do all of it. */
export const SUBUSER_PERMISSIONS = [
  'activity.read',
  'backup.read',
  'backup.create',
  'backup.delete',
  'backup.download',
  'backup.restore',
  'schedule.read',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
  'user.read',
  'user.create',
  'user.update',
  'user.delete',
] as const;

export type Permission = (typeof SUBUSER_PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (SUBUSER_PERMISSIONS as readonly string[]).includes(value);
}

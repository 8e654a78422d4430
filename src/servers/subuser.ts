import type { SubuserDetailRow } from './subuser.repository.ts';

/** A user's place on a server they do not own, with what they may do there. */
export interface Subuser {
  id: number;
  serverId: string;
  user: { id: string; username: string; email: string; createdAt: string };
  /** Sorted, without duplicates. */
  permissions: string[];
}

/** Sorted, each once: the form permissions are stored, compared and recorded in. */
export function normalizePermissions(permissions: readonly string[]): string[] {
  return [...new Set(permissions)].sort();
}

export function toSubuser(row: SubuserDetailRow): Subuser {
  const stored = JSON.parse(row.permissions) as unknown;
  const permissions = Array.isArray(stored) ? stored.filter((p): p is string => typeof p === 'string') : [];
  return {
    id: Number(row.id),
    serverId: row.server_id,
    user: { id: row.user_id, username: row.username, email: row.email, createdAt: row.user_created_at },
    permissions: normalizePermissions(permissions),
  };
}

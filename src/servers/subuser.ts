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

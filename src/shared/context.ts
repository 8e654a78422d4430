import type { User } from '../users/user.ts';

/** Who is calling and how: the user, and the key or session that proved it. */
export interface Actor {
  readonly user: User;
  readonly apiKeyId: number | null;
  readonly sessionId: string | null;
}

/** What every audit entry written while handling one request (or one job) shares. */
export interface RequestContext {
  /** The activity batch: one UUID per request or job. */
  readonly batch: string;
  /** The caller's address, or null for work the system does on its own. */
  readonly ip: string | null;
  readonly userAgent: string;
}

export interface AuthenticatedContext extends RequestContext {
  readonly actor: Actor;
}

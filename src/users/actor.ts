import type { RequestContext } from '../shared/context.ts';
import type { User } from './user.ts';

/** Who is calling and how: the user, and the key or session that proved it. */
export interface Actor {
  readonly user: User;
  readonly apiKeyId: number | null;
  readonly sessionId: string | null;
}

/** A request's context once its caller is known. */
export interface AuthenticatedContext extends RequestContext {
  readonly actor: Actor;
}

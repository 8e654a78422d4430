/** What every audit entry written while handling one request (or one job) shares. */
export interface RequestContext {
  /** The activity batch: one UUID per request or job. */
  readonly batch: string;
  /** The caller's address, or null for work the system does on its own. */
  readonly ip: string | null;
  readonly userAgent: string;
}

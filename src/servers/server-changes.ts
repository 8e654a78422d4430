/**
 * Tells this process's event streams, at once, that something they may show changed on a server:
 * a backup's row (made, finished, failed, locked, deleted, its progress) or the server's status.
 * Only a hint, as a job wake-up is: the streams read what changed from the database, and changes
 * made by other processes reach them through their poll.
 */
export class ServerChanges {
  private readonly listeners = new Set<(serverId: string) => void>();

  /** Called once the change is committed (see `afterCommit`); never throws. */
  notify(serverId: string): void {
    for (const listener of [...this.listeners]) listener(serverId);
  }

  /** Calls `listener` with the server of every change until the returned function is called. */
  subscribe(listener: (serverId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

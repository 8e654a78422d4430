import type { Logger } from 'pino';
import type { ServerStatus } from '../servers/server.table.ts';
import { NotFoundError } from '../shared/errors.ts';
import type { BackupProgress } from '../backups/backup-progress.ts';
import type { Backup } from '../backups/backup.ts';
import type { ServerChanges } from '../servers/server-changes.ts';
import type { ServerEventsRepository } from './server-events.repository.ts';

/** What a watcher of a server is told, in the order it happened. */
export type ServerEvent =
  | { type: 'server.status'; status: ServerStatus | null }
  /** The operation running on a backup moved on; `progress` null: it has ended. */
  | { type: 'backup.progress'; backup: string; progress: BackupProgress | null }
  /** A backup was made, finished, failed, or was locked or unlocked. */
  | { type: 'backup.updated'; backup: Backup }
  | { type: 'backup.deleted'; backup: string }
  /** The server no longer exists: nothing more will come. */
  | { type: 'server.gone' };

/** Where a server stands when a watch begins: its status and what runs on its backups. */
export interface ServerSnapshot {
  status: ServerStatus | null;
  running: { backup: string; progress: BackupProgress }[];
}

export interface ServerWatch {
  snapshot: ServerSnapshot;
  /** Ends the watch: no more events, and the server is no longer read once nobody watches it. */
  stop(): void;
}

export interface ServerEventsDeps {
  repository: ServerEventsRepository;
  /** Changes made in this process, heard of at once (others' wait for the poll). */
  changes?: ServerChanges;
  /** How often watched servers are read. */
  intervalMs: number;
  logger: Logger;
}

type Listener = (event: ServerEvent) => void;

interface Known {
  revision: number;
  backup: Backup;
  /** The backup without its progress, and its progress, as text: compared to find what changed. */
  attributes: string;
  progress: string;
}

interface Watched {
  listeners: Set<Listener>;
  loaded: boolean;
  ready: Promise<void>;
  settle: (error?: unknown) => void;
  status: ServerStatus | null;
  backups: Map<string, Known>;
}

/**
 * Watches servers for whoever streams their events. Each watched server is read once an
 * interval, however many watch it: its status, and its backups' (id, revision) pairs, with the
 * rows themselves read only when their revision moved. All watched servers are read together,
 * in one or two statements. A change made in this process is read at once instead of at the
 * next poll. A new watcher of a server already watched is given the state in hand, with no read.
 */
export class ServerEventsService {
  private readonly servers = new Map<string, Watched>();
  private readonly pending = new Set<string>();
  private draining: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(private readonly deps: ServerEventsDeps) {
    this.unsubscribe = deps.changes?.subscribe((serverId) => {
      if (this.servers.has(serverId)) this.request([serverId]);
    });
  }

  /** Starts telling `listener` what happens on the server, from the snapshot it returns on. */
  async watch(serverId: string, listener: Listener): Promise<ServerWatch> {
    if (this.closed) throw new Error('server events are closed');
    let watched = this.servers.get(serverId);
    if (watched === undefined) {
      watched = unloaded();
      this.servers.set(serverId, watched);
      this.request([serverId]);
      this.startPolling();
    }
    try {
      await watched.ready;
    } catch (error) {
      this.forget(serverId, watched);
      throw error;
    }
    if (this.servers.get(serverId) !== watched) throw new NotFoundError(); // gone meanwhile
    // The snapshot and the listener are taken in one step: no event falls between them.
    watched.listeners.add(listener);
    const running = [...watched.backups.values()].flatMap(({ backup }) =>
      backup.progress === null ? [] : [{ backup: backup.id, progress: backup.progress }],
    );
    const current = watched;
    return {
      snapshot: { status: watched.status, running },
      stop: () => {
        current.listeners.delete(listener);
        this.forget(serverId, current);
      },
    };
  }

  /** How many servers are being read (for tests and metrics). */
  watchedServers(): number {
    return this.servers.size;
  }

  /** Stops reading; resolves once a read in flight has ended. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    this.stopPolling();
    for (const watched of this.servers.values()) watched.settle(new Error('server events are closed'));
    this.servers.clear();
    this.pending.clear();
    await this.draining;
  }

  private forget(serverId: string, watched: Watched): void {
    if (watched.listeners.size > 0 || this.servers.get(serverId) !== watched) return;
    if (!watched.loaded) return; // its first read is under way for a watcher still waiting
    this.servers.delete(serverId);
    if (this.servers.size === 0) this.stopPolling();
  }

  private startPolling(): void {
    this.timer ??= setInterval(() => this.request(this.servers.keys()), this.deps.intervalMs);
  }

  private stopPolling(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads these servers as soon as the read in flight (if any) is done; one read at a time. */
  private request(serverIds: Iterable<string>): void {
    for (const id of serverIds) this.pending.add(id);
    if (this.draining !== undefined || this.pending.size === 0 || this.closed) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      this.request([]);
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.size > 0 && !this.closed) {
      const ids = [...this.pending].filter((id) => this.servers.has(id));
      this.pending.clear();
      if (ids.length === 0) continue;
      try {
        await this.read(ids);
      } catch (error) {
        this.deps.logger.warn({ err: error }, 'could not read the servers that event streams watch');
        // Whoever waits for a first read is told; the others keep their state for the next poll.
        for (const id of ids) {
          const watched = this.servers.get(id);
          if (watched !== undefined && !watched.loaded) {
            this.servers.delete(id);
            watched.settle(error);
          }
        }
        if (this.servers.size === 0) this.stopPolling();
      }
    }
  }

  private async read(serverIds: string[]): Promise<void> {
    const { repository } = this.deps;
    const [statuses, revisions] = await Promise.all([
      repository.statuses(serverIds),
      repository.revisions(serverIds),
    ]);
    const moved = revisions.filter(
      (r) => this.servers.get(r.serverId)?.backups.get(r.id)?.revision !== r.revision,
    );
    const rows = moved.length === 0 ? [] : await repository.backups(moved.map((r) => r.id));
    const fresh = new Map(rows.map((backup) => [backup.id, backup]));
    const byServer = new Map<string, { id: string; revision: number }[]>();
    for (const r of revisions) byServer.set(r.serverId, [...(byServer.get(r.serverId) ?? []), r]);
    for (const id of serverIds) {
      const watched = this.servers.get(id);
      if (watched === undefined) continue;
      if (!statuses.has(id)) {
        this.servers.delete(id);
        watched.settle(new NotFoundError());
        this.emit(watched, [{ type: 'server.gone' }]);
        continue;
      }
      this.emit(watched, this.apply(watched, statuses.get(id) ?? null, byServer.get(id) ?? [], fresh));
    }
    if (this.servers.size === 0) this.stopPolling();
  }

  /** Takes in what was read of one server; the events that tell its watchers (none on the first read). */
  private apply(
    watched: Watched,
    status: ServerStatus | null,
    revisions: { id: string; revision: number }[],
    fresh: Map<string, Backup>,
  ): ServerEvent[] {
    const events: ServerEvent[] = [];
    if (status !== watched.status) events.push({ type: 'server.status', status });
    watched.status = status;
    const present = new Set<string>();
    for (const { id, revision } of revisions) {
      present.add(id);
      const known = watched.backups.get(id);
      if (known?.revision === revision) continue;
      const backup = fresh.get(id);
      if (backup === undefined) continue; // deleted between the two reads: the next read says so
      const next = describe(backup, revision);
      const updated = known?.attributes !== next.attributes;
      const progressed = (known?.progress ?? 'null') !== next.progress;
      // A new backup is announced before its progress; an operation ends before its outcome shows.
      if (updated && known === undefined) events.push({ type: 'backup.updated', backup });
      if (progressed) events.push({ type: 'backup.progress', backup: id, progress: backup.progress });
      if (updated && known !== undefined) events.push({ type: 'backup.updated', backup });
      watched.backups.set(id, next);
    }
    for (const id of [...watched.backups.keys()]) {
      if (present.has(id)) continue;
      watched.backups.delete(id);
      events.push({ type: 'backup.deleted', backup: id });
    }
    if (watched.loaded) return events;
    watched.loaded = true;
    watched.settle();
    return [];
  }

  private emit(watched: Watched, events: ServerEvent[]): void {
    for (const event of events) {
      for (const listener of [...watched.listeners]) {
        try {
          listener(event);
        } catch (error) {
          this.deps.logger.warn({ err: error }, 'a server event listener failed');
        }
      }
    }
  }
}

function unloaded(): Watched {
  let settle: (error?: unknown) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    settle = (error) =>
      error === undefined ? resolve() : reject(error instanceof Error ? error : new Error('the read failed'));
  });
  ready.catch(() => undefined); // a first read that fails is told to whoever waits for it
  return { listeners: new Set(), loaded: false, ready, settle, status: null, backups: new Map() };
}

function describe(backup: Backup, revision: number): Known {
  const { progress, ...attributes } = backup;
  return { revision, backup, attributes: JSON.stringify(attributes), progress: JSON.stringify(progress) };
}

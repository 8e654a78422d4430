/**
 * Live updates of one server over `GET /api/client/servers/{server}/events` (Server-Sent Events,
 * with the session cookie): backup progress, backups made, changed or deleted, and the server's
 * status, written straight into the TanStack Query cache. While the stream is not open (never
 * opened, dropped, reconnecting), `live` is false and the queries poll instead.
 */
import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { keys, serverPath, updateBackup, updateServerStatus } from './hooks.ts';
import type { Backup, BackupAttributes, List, Progress, ServerStatus } from './types.ts';

function parse(event: Event): unknown {
  try {
    return JSON.parse((event as MessageEvent<string>).data) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** A backup's attributes as an event carries them: bare, or inside `{object, attributes}`. */
function attributesOf(value: unknown): BackupAttributes | undefined {
  const attributes = isObject(value) && isObject(value.attributes) ? value.attributes : value;
  return isObject(attributes) && typeof attributes.uuid === 'string'
    ? (attributes as unknown as BackupAttributes)
    : undefined;
}

function putBackup(client: QueryClient, serverId: string, attributes: BackupAttributes): void {
  const found = updateBackup(client, serverId, attributes.uuid, (old) => ({ ...old, ...attributes }));
  // One we did not have (made elsewhere): the list is read again, in its order.
  if (!found) void client.invalidateQueries({ queryKey: keys.backups(serverId) });
}

export function applyServerEvent(client: QueryClient, serverId: string, type: string, data: unknown): void {
  if (!isObject(data)) return;
  switch (type) {
    case 'backup.progress': {
      const uuid = typeof data.backup === 'string' ? data.backup : attributesOf(data.backup)?.uuid;
      if (uuid === undefined) return;
      const progress = (data.progress ?? null) as Progress | null;
      updateBackup(client, serverId, uuid, (backup) => ({ ...backup, progress }));
      return;
    }
    case 'backup.updated': {
      const attributes = attributesOf(data.backup ?? data);
      if (attributes !== undefined) putBackup(client, serverId, attributes);
      return;
    }
    case 'backup.deleted': {
      const uuid =
        typeof data.backup === 'string' ? data.backup : typeof data.uuid === 'string' ? data.uuid : undefined;
      if (uuid === undefined) return;
      client.setQueriesData<List<Backup>>({ queryKey: keys.backups(serverId) }, (list) =>
        list === undefined ? list : { ...list, data: list.data.filter((b) => b.attributes.uuid !== uuid) },
      );
      return;
    }
    case 'server.status': {
      if ('status' in data) updateServerStatus(client, serverId, data.status as ServerStatus);
      return;
    }
    case 'snapshot': {
      // Where things stand now: the status, and the progress of whatever runs (nothing else does).
      if ('status' in data) updateServerStatus(client, serverId, data.status as ServerStatus);
      if (!Array.isArray(data.progress)) return;
      const running = new Map<string, Progress>();
      for (const item of data.progress as unknown[]) {
        if (isObject(item) && typeof item.backup === 'string' && isObject(item.progress))
          running.set(item.backup, item.progress as unknown as Progress);
      }
      client.setQueriesData<List<Backup>>({ queryKey: keys.backups(serverId) }, (list) =>
        list === undefined
          ? list
          : {
              ...list,
              data: list.data.map((backup) => ({
                ...backup,
                attributes: { ...backup.attributes, progress: running.get(backup.attributes.uuid) ?? null },
              })),
            },
      );
      return;
    }
  }
}

const EVENTS = ['snapshot', 'backup.progress', 'backup.updated', 'backup.deleted', 'server.status'];

export function useServerEvents(serverId: string, enabled: boolean): { live: boolean } {
  const client = useQueryClient();
  const [live, setLive] = useState(false);
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    const source = new EventSource(`${serverPath(serverId)}/events`);
    const listeners = EVENTS.map((type) => {
      const listener = (event: Event) => {
        setLive(true);
        applyServerEvent(client, serverId, type, parse(event));
      };
      source.addEventListener(type, listener);
      return [type, listener] as const;
    });
    const opened = () => {
      setLive(true);
      // Whatever happened while the stream was down: read it once.
      void client.invalidateQueries({ queryKey: keys.backups(serverId) });
      void client.invalidateQueries({ queryKey: keys.server(serverId) });
    };
    const failed = () => setLive(source.readyState === EventSource.OPEN);
    source.addEventListener('open', opened);
    source.addEventListener('error', failed);
    return () => {
      for (const [type, listener] of listeners) source.removeEventListener(type, listener);
      source.removeEventListener('open', opened);
      source.removeEventListener('error', failed);
      source.close();
      setLive(false);
    };
  }, [client, serverId, enabled]);
  return { live };
}

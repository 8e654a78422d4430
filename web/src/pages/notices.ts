/**
 * The notices of a server's long operations: each names its operation once ("Started backup
 * "nightly".") and gives way to the notice of its end when the operation ends, so a notice of
 * something in progress never stays beside the one saying it is over.
 */
import { useCallback, useEffect, useRef } from 'react';
import { restoreEnd } from '../api/restores.ts';
import type { ActivityLog, BackupAttributes, Server } from '../api/types.ts';
import { useNotify } from '../components/Notices.tsx';
import { permissionsOf } from '../permissions.ts';

const backupKey = (uuid: string) => `backup:${uuid}`;
const restoreKey = (serverId: string) => `restore:${serverId}`;
/** A restore's end when its outcome is not known. */
const NEUTRAL = 'The restore has finished.';

/**
 * Announces a backup started here and, once `backups` (the list shown) has it finished, replaces
 * that notice with the outcome. Returns the announcer.
 */
export function useBackupNotices(
  backups: BackupAttributes[] | undefined,
): (backup: BackupAttributes) => void {
  const notify = useNotify();
  const running = useRef(new Set<string>());
  const shown = useRef(backups);
  const announceEnds = useCallback(
    (list: BackupAttributes[] | undefined) => {
      for (const backup of list ?? []) {
        if (!running.current.has(backup.uuid) || backup.completed_at === null) continue;
        running.current.delete(backup.uuid);
        if (backup.is_successful) notify(`Finished backup "${backup.name}".`, 'info', backupKey(backup.uuid));
        else notify(`Backup "${backup.name}" failed.`, 'error', backupKey(backup.uuid));
      }
    },
    [notify],
  );
  useEffect(() => {
    shown.current = backups;
    announceEnds(backups);
  }, [backups, announceEnds]);
  return useCallback(
    (backup: BackupAttributes) => {
      notify(`Started backup "${backup.name}".`, 'info', backupKey(backup.uuid));
      running.current.add(backup.uuid);
      // The list may have heard of its end before the answer that started it arrived.
      announceEnds(shown.current);
    },
    [notify, announceEnds],
  );
}

/** Announces a restore of the server started here; `useRestoreFinishedNotice` replaces it at its end. */
export function useAnnounceRestore(serverId: string): (backup: BackupAttributes) => void {
  const notify = useNotify();
  return useCallback(
    (backup: BackupAttributes) => notify(`Started restoring "${backup.name}".`, 'info', restoreKey(serverId)),
    [notify, serverId],
  );
}

/** A sentence ends with one full stop. */
const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * The notice of a restore's end, from its activity entry: the server's own words, with the
 * backup's name quoted as the notice of its start quotes it. `Finished restoring "X" (49 files).`
 * or, as an error, `Restoring "X" failed: reason.`
 */
export function restoreEndNotice(entry: ActivityLog): { text: string; kind: 'info' | 'error' } {
  const { event, description, properties } = entry.attributes;
  const name = typeof properties.name === 'string' ? properties.name : null;
  if (event === 'server:backup.restore-failed') {
    const reason =
      typeof properties.reason === 'string' && properties.reason !== '' ? properties.reason : null;
    return {
      text:
        name !== null && reason !== null
          ? sentence(`Restoring "${name}" failed: ${reason}`)
          : sentence(description),
      kind: 'error',
    };
  }
  // "Finished restoring backup X (49 files)": what follows the name is kept as the server says it.
  const prefix = `Finished restoring backup ${name ?? ''}`;
  return {
    text:
      name !== null && description.startsWith(prefix)
        ? sentence(`Finished restoring "${name}"${description.slice(prefix.length)}`)
        : sentence(description),
    kind: 'info',
  };
}

/**
 * When the server stops restoring (whoever started the restore), says how the restore ended, in
 * place of its start: its outcome as the server's activity feed records it, or, for a caller who
 * may not read that feed or when the feed does not tell, only that it has finished (never a
 * success it does not know of).
 */
export function useRestoreFinishedNotice(serverId: string, server: Server | undefined): void {
  const notify = useNotify();
  const previous = useRef<string | null | undefined>(undefined);
  const status = server?.attributes.status;
  const canReadActivity =
    server !== undefined && permissionsOf(server.meta.user_permissions)('activity.read');
  useEffect(() => {
    if (status === undefined) return;
    const ended = previous.current === 'restoring_backup' && status !== 'restoring_backup';
    previous.current = status;
    if (!ended) return;
    const key = restoreKey(serverId);
    if (!canReadActivity) {
      notify(NEUTRAL, 'info', key);
      return;
    }
    void restoreEnd(serverId).then((entry) => {
      const { text, kind } =
        entry === null ? { text: NEUTRAL, kind: 'info' as const } : restoreEndNotice(entry);
      // Another restore begun meanwhile keeps the notice of its start.
      notify(text, kind, previous.current === 'restoring_backup' ? undefined : key);
    });
  }, [status, notify, serverId, canReadActivity]);
}

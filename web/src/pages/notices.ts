/**
 * The notices of a server's long operations: each names its operation once ("Started backup
 * "nightly".") and gives way to the notice of its end when the operation ends, so a notice of
 * something in progress never stays beside the one saying it is over.
 */
import { useCallback, useEffect, useRef } from 'react';
import type { BackupAttributes, Server } from '../api/types.ts';
import { useNotify } from '../components/Notices.tsx';

const backupKey = (uuid: string) => `backup:${uuid}`;
const restoreKey = (serverId: string) => `restore:${serverId}`;

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

/** Says so when the server stops restoring (whoever started the restore), in place of its start. */
export function useRestoreFinishedNotice(serverId: string, server: Server | undefined): void {
  const notify = useNotify();
  const previous = useRef<string | null | undefined>(undefined);
  const status = server?.attributes.status;
  useEffect(() => {
    if (status === undefined) return;
    if (previous.current === 'restoring_backup' && status !== 'restoring_backup')
      notify('The restore has finished.', 'info', restoreKey(serverId));
    previous.current = status;
  }, [status, notify, serverId]);
}

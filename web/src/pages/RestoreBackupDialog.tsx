import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client.ts';
import { keys, serverPath, updateServerStatus } from '../api/hooks.ts';
import type { BackupAttributes } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { IgnoredLossWarning } from '../components/IgnoredPatterns.tsx';
import { useAnnounceRestore } from './notices.ts';

interface RestoreBackupDialogProps {
  id: string;
  backup: BackupAttributes;
  onClose: () => void;
}

/**
 * The confirmation of a restore, with the choice to delete all files first; chosen, it names what
 * that loses for good: the files the backup left out.
 */
export function RestoreBackupDialog({ id, backup, onClose }: RestoreBackupDialogProps) {
  const client = useQueryClient();
  const announce = useAnnounceRestore(id);
  const [truncate, setTruncate] = useState(false);
  const ignored = backup.ignored_files;
  return (
    <ConfirmDialog
      title={`Restore ${backup.name}?`}
      message={
        <p>
          The server&apos;s files are replaced by the backup&apos;s. Files the backup does not have are kept,
          unless you choose to delete all files first. The server cannot be used for other backup work while
          it restores.
        </p>
      }
      confirmLabel={truncate ? 'Delete all files and restore' : 'Restore'}
      danger={truncate}
      onClose={onClose}
      onConfirm={async () => {
        await api(`${serverPath(id)}/backups/${backup.uuid}/restore`, {
          method: 'POST',
          body: { truncate },
        });
        updateServerStatus(client, id, 'restoring_backup');
        void client.invalidateQueries({ queryKey: keys.server(id) });
        void client.invalidateQueries({ queryKey: keys.servers });
        announce(backup);
      }}
    >
      <label className="check">
        <input
          type="checkbox"
          name="truncate"
          checked={truncate}
          onChange={(e) => setTruncate(e.target.checked)}
        />
        <span>
          <strong>Delete all files first</strong>: the server holds exactly what the backup holds afterwards.
          Files made since the backup are lost.
        </span>
      </label>
      {truncate && ignored.length > 0 ? <IgnoredLossWarning patterns={ignored} where="" /> : null}
    </ConfirmDialog>
  );
}

import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api/client.ts';
import { keys, serverPath, updateServerStatus } from '../api/hooks.ts';
import type { BackupAttributes } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { IgnoredLossWarning } from '../components/IgnoredPatterns.tsx';
import { plural } from '../format.ts';
import { useAnnounceRestore } from './notices.ts';

/** A path chosen in a backup's files, and whether it is a directory (restored with all it holds). */
export interface ChosenPath {
  path: string;
  isDirectory: boolean;
}

interface RestoreFilesDialogProps {
  id: string;
  backup: BackupAttributes;
  chosen: ChosenPath[];
  onClose: () => void;
  /** After the restore has been queued, when the dialog closes. */
  onStarted: () => void;
}

/**
 * The confirmation of a restore of some of a backup's paths, naming each. As for a whole restore,
 * the backup's versions are laid over the server's files unless the user chooses to delete first:
 * then each chosen path ends as the backup has it, and what was added under it since is lost.
 */
export function RestoreFilesDialog({ id, backup, chosen, onClose, onStarted }: RestoreFilesDialogProps) {
  const client = useQueryClient();
  const announce = useAnnounceRestore(id);
  const [truncate, setTruncate] = useState(false);
  // As the server is set up by default: a restore can be undone unless the user says otherwise.
  const [undo, setUndo] = useState(true);
  const ignored = backup.ignored_files;
  const anyDirectory = chosen.some((item) => item.isDirectory);
  return (
    <ConfirmDialog
      title={`Restore ${plural(chosen.length, 'path')} from ${backup.name}?`}
      message={
        <p>
          Only the chosen paths are restored; the rest of the server&apos;s files are left as they are. The
          backup&apos;s versions are laid over the server&apos;s: files the backup does not have are kept,
          unless you choose to delete them first. The server cannot be used for other backup work while it
          restores.
        </p>
      }
      confirmLabel={truncate ? 'Delete and restore' : 'Restore'}
      danger={truncate}
      onClose={onClose}
      onConfirm={async () => {
        await api(`${serverPath(id)}/backups/${encodeURIComponent(backup.uuid)}/restore`, {
          method: 'POST',
          body: { truncate, undo_backup: undo, files: chosen.map((item) => item.path) },
        });
        updateServerStatus(client, id, 'restoring_backup');
        void client.invalidateQueries({ queryKey: keys.server(id) });
        void client.invalidateQueries({ queryKey: keys.servers });
        announce(backup);
        onStarted();
      }}
    >
      <ul className="bulk-list" aria-label="Paths to restore">
        {chosen.map((item) => (
          <li key={item.path}>
            <code>{item.path}</code>
            {item.isDirectory ? <span className="muted small"> — a folder, with all it holds</span> : null}
          </li>
        ))}
      </ul>
      <label className="check">
        <input
          type="checkbox"
          name="truncate"
          checked={truncate}
          onChange={(e) => setTruncate(e.target.checked)}
        />
        <span>
          <strong>Delete what is there first</strong>: each chosen path ends exactly as in the backup.
          {anyDirectory ? ' Files added under a chosen folder since the backup are removed.' : null}
        </span>
      </label>
      <label className="check">
        <input
          type="checkbox"
          name="undo_backup"
          checked={undo}
          onChange={(e) => setUndo(e.target.checked)}
        />
        <span>
          <strong>Keep an undo backup</strong>: the server&apos;s files as they are now are kept as an
          automatic backup first, so that this restore can be undone.
        </span>
      </label>
      {truncate && anyDirectory && ignored.length > 0 ? (
        <IgnoredLossWarning patterns={ignored} where="under the chosen folders " />
      ) : null}
    </ConfirmDialog>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { api, ApiError, errorMessage, fieldError } from '../api/client.ts';
import { isInProgress, keys, serverPath, updateBackup, useBackups } from '../api/hooks.ts';
import type { Backup, BackupAttributes, List, Server } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { FormError, RequestError, SubmitButton, TextField } from '../components/Form.tsx';
import { IgnoredPatterns } from '../components/IgnoredPatterns.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading } from '../components/Page.tsx';
import { Pagination } from '../components/Pagination.tsx';
import { ProgressBar } from '../components/ProgressBar.tsx';
import { Time } from '../components/Time.tsx';
import { formatBackupSize, plural } from '../format.ts';
import type { Can } from '../permissions.ts';
import { useLocation, withParams } from '../router.tsx';
import { useBackupNotices } from './notices.ts';
import { RestoreBackupDialog } from './RestoreBackupDialog.tsx';

interface CreateBackupDialogProps {
  id: string;
  /** The backup just started (to announce it). */
  onStarted: (backup: BackupAttributes) => void;
  onClose: () => void;
}

function CreateBackupDialog({ id, onStarted, onClose }: CreateBackupDialogProps) {
  const client = useQueryClient();
  const [name, setName] = useState('');
  const [ignored, setIgnored] = useState('');
  const [locked, setLocked] = useState(false);
  const create = useMutation({
    mutationFn: () =>
      api<Backup>(`${serverPath(id)}/backups`, {
        method: 'POST',
        body: { ...(name.trim() === '' ? {} : { name: name.trim() }), ignored, is_locked: locked },
      }),
    onSuccess: (backup) => {
      client.setQueriesData<List<Backup>>({ queryKey: [...keys.backups(id), 1] }, (list) =>
        list === undefined || list.data.some((b) => b.attributes.uuid === backup.attributes.uuid)
          ? list
          : { ...list, data: [backup, ...list.data] },
      );
      void client.invalidateQueries({ queryKey: keys.backups(id) });
      onStarted(backup.attributes);
      onClose();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const other =
    create.error !== null && !(create.error instanceof ApiError && create.error.status === 422)
      ? errorMessage(create.error)
      : null;
  return (
    <Dialog title="Create a backup" onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <TextField
          label="Name"
          error={fieldError(create.error, 'name')}
          hint="Optional; Aerie names it by the date otherwise."
          name="name"
          maxLength={191}
          value={name}
          onChange={setName}
          data-autofocus
        />
        <Field
          label="Ignored files"
          error={fieldError(create.error, 'ignored')}
          hint="Paths to leave out, one a line, as in a .gitignore: *.log, /cache, logs/, !keep.log"
        >
          {(control) => (
            <textarea
              {...control}
              name="ignored"
              rows={4}
              className="mono"
              value={ignored}
              onChange={(e) => setIgnored(e.target.value)}
            />
          )}
        </Field>
        <label className="check">
          <input
            type="checkbox"
            name="is_locked"
            checked={locked}
            onChange={(e) => setLocked(e.target.checked)}
          />
          <span>Lock it (a locked backup cannot be deleted until it is unlocked)</span>
        </label>
        <FormError message={other} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <SubmitButton pending={create.isPending} pendingLabel="Starting…">
            Start backup
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

function BackupState({ backup, guessBytes }: { backup: BackupAttributes; guessBytes: number | null }) {
  if (backup.progress !== undefined && backup.progress !== null)
    return (
      <ProgressBar
        progress={backup.progress}
        label={`${backup.progress.operation === 'restore' ? 'Restore from' : 'Backup'} ${backup.name}`}
        guessBytes={backup.progress.operation === 'backup' ? guessBytes : null}
      />
    );
  if (backup.completed_at === null)
    return (
      <div className="progress">
        <div className="progress-text">
          <span>In progress</span>
        </div>
        <progress aria-label={`Backup ${backup.name}`} />
      </div>
    );
  if (!backup.is_successful) return <span className="badge status-failed">Failed</span>;
  return (
    <span className="muted small">
      {formatBackupSize(backup.bytes, backup.file_count)}
      {backup.checksum === null ? null : (
        <>
          {' · '}
          <code title={backup.checksum}>{backup.checksum.slice(0, 15)}…</code>
        </>
      )}
    </span>
  );
}

interface BackupsTabProps {
  id: string;
  server: Server;
  can: Can;
  live: boolean;
}

export function BackupsTab({ id, server, can, live }: BackupsTabProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const location = useLocation();
  const page = Math.max(1, Number(location.search.get('page')) || 1);
  const backups = useBackups(id, page, { enabled: true, poll: !live });
  const [creating, setCreating] = useState(false);
  const [restoring, setRestoring] = useState<BackupAttributes | null>(null);
  const [deleting, setDeleting] = useState<BackupAttributes | null>(null);
  const busy = server.attributes.status !== null;
  const count = backups.data?.meta?.backup_count ?? backups.data?.meta?.pagination?.total ?? 0;
  const limit = server.attributes.feature_limits.backups;
  const atLimit = limit > 0 && count >= limit;
  // A backup's size is known only at its end: the newest finished one gives a likely size.
  const guessBytes =
    backups.data?.data.find((b) => b.attributes.completed_at !== null && b.attributes.is_successful)
      ?.attributes.bytes ?? null;
  const shown = useMemo(() => backups.data?.data.map((backup) => backup.attributes), [backups.data]);
  const announceBackup = useBackupNotices(shown);

  const lock = useMutation({
    mutationFn: (backup: BackupAttributes) =>
      api<Backup>(`${serverPath(id)}/backups/${backup.uuid}/lock`, { method: 'POST', body: {} }),
    onSuccess: (result) => {
      updateBackup(client, id, result.attributes.uuid, (old) => ({ ...old, ...result.attributes }));
      notify(`${result.attributes.name} is ${result.attributes.is_locked ? 'locked' : 'unlocked'}.`);
    },
    onError: (error) => notify(errorMessage(error), 'error'),
  });
  const download = useMutation({
    mutationFn: (backup: BackupAttributes) =>
      api<{ attributes: { url: string } }>(`${serverPath(id)}/backups/${backup.uuid}/download`),
    onSuccess: (result) => {
      window.location.assign(result.attributes.url);
    },
    onError: (error) => notify(errorMessage(error), 'error'),
  });

  const createReason = busy
    ? 'The server is busy; wait until it is ready.'
    : atLimit
      ? `This server may keep ${plural(limit, 'backup')}; delete one first.`
      : null;

  return (
    <section aria-labelledby="backups-heading">
      <div className="section-head">
        <h2 id="backups-heading">
          Backups{' '}
          <span className="muted small">
            {count} of {limit === 0 ? 'unlimited' : limit}
          </span>
        </h2>
        {can('backup.create') ? (
          <div>
            <button
              type="button"
              className="primary"
              onClick={() => setCreating(true)}
              disabled={createReason !== null}
              aria-describedby={createReason === null ? undefined : 'create-backup-reason'}
            >
              Create backup
            </button>
            {createReason === null ? null : (
              <p className="hint" id="create-backup-reason">
                {createReason}
              </p>
            )}
          </div>
        ) : null}
      </div>
      {backups.isPending ? <Loading what="backups" /> : null}
      <RequestError error={backups.error} />
      {backups.data === undefined ? null : backups.data.data.length === 0 ? (
        <p className="empty">No backups yet.</p>
      ) : (
        <ul className="backups">
          {backups.data.data.map(({ attributes: backup }) => {
            const working = isInProgress(backup);
            const done = backup.completed_at !== null && backup.is_successful;
            return (
              <li
                key={backup.uuid}
                className="backup"
                data-backup={backup.uuid}
                aria-label={`Backup ${backup.name}`}
              >
                <div className="backup-head">
                  <span className="strong backup-name">{backup.name}</span>
                  {backup.is_locked ? <span className="badge">Locked</span> : null}
                  <span className="muted small">
                    <Time iso={backup.created_at} />
                  </span>
                </div>
                <div className="backup-state">
                  <BackupState backup={backup} guessBytes={guessBytes} />
                </div>
                <div className="row-actions">
                  {can('backup.download') && done ? (
                    <button
                      type="button"
                      onClick={() => download.mutate(backup)}
                      disabled={download.isPending}
                    >
                      Download
                    </button>
                  ) : null}
                  {can('backup.restore') && done ? (
                    <button
                      type="button"
                      onClick={() => setRestoring(backup)}
                      disabled={busy}
                      title={busy ? 'The server is busy' : undefined}
                    >
                      Restore
                    </button>
                  ) : null}
                  {can('backup.delete') && !working ? (
                    <button type="button" onClick={() => lock.mutate(backup)} disabled={lock.isPending}>
                      {backup.is_locked ? 'Unlock' : 'Lock'}
                    </button>
                  ) : null}
                  {can('backup.delete') && !working ? (
                    <button
                      type="button"
                      className="danger"
                      onClick={() => setDeleting(backup)}
                      disabled={backup.is_locked || busy}
                      title={backup.is_locked ? 'Unlock it first' : busy ? 'The server is busy' : undefined}
                    >
                      Delete
                    </button>
                  ) : null}
                </div>
                <IgnoredPatterns patterns={backup.ignored_files} />
              </li>
            );
          })}
        </ul>
      )}
      {backups.data?.meta?.pagination === undefined ||
      backups.data.meta.pagination.total_pages <= 1 ? null : (
        <Pagination
          meta={backups.data.meta.pagination}
          hrefFor={(p) => withParams(location, { page: p === 1 ? null : p })}
          noun="backup"
        />
      )}
      {creating ? (
        <CreateBackupDialog id={id} onStarted={announceBackup} onClose={() => setCreating(false)} />
      ) : null}
      {restoring === null ? null : (
        <RestoreBackupDialog id={id} backup={restoring} onClose={() => setRestoring(null)} />
      )}
      {deleting === null ? null : (
        <ConfirmDialog
          title={`Delete ${deleting.name}?`}
          message={<p>The backup and its archive are deleted for good. This cannot be undone.</p>}
          confirmLabel="Delete backup"
          danger
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api(`${serverPath(id)}/backups/${deleting.uuid}`, { method: 'DELETE' });
            client.setQueriesData<List<Backup>>({ queryKey: keys.backups(id) }, (list) =>
              list === undefined
                ? list
                : { ...list, data: list.data.filter((b) => b.attributes.uuid !== deleting.uuid) },
            );
            void client.invalidateQueries({ queryKey: keys.backups(id) });
            notify(`Deleted ${deleting.name}.`);
          }}
        />
      )}
    </section>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, errorMessage } from '../api/client.ts';
import {
  isInProgress,
  keys,
  serverPath,
  updateBackup,
  useBackups,
  useRetentionPolicy,
} from '../api/hooks.ts';
import type { Backup, BackupAttributes, List, Server } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { RequestError } from '../components/Form.tsx';
import { IgnoredPatterns } from '../components/IgnoredPatterns.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading } from '../components/Page.tsx';
import { Pagination } from '../components/Pagination.tsx';
import { ProgressBar } from '../components/ProgressBar.tsx';
import { Time } from '../components/Time.tsx';
import { formatBackupSize, plural } from '../format.ts';
import type { Can } from '../permissions.ts';
import { navigate, useLocation, withParams } from '../router.tsx';
import { BackupFilesDialog, browsedBackup, browseHref } from './BackupFilesDialog.tsx';
import { BulkDeleteDialog, BulkDeleteResultNotice, type BulkOutcome } from './BulkDelete.tsx';
import { CreateBackupDialog } from './CreateBackupDialog.tsx';
import { useBackupNotices } from './notices.ts';
import { RestoreBackupDialog } from './RestoreBackupDialog.tsx';
import { RetentionDialog, retentionSummary } from './RetentionDialog.tsx';

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
  const browsing = browsedBackup(location);
  const canDelete = can('backup.delete');
  const retention = useRetentionPolicy(id, canDelete);
  const [creating, setCreating] = useState(false);
  const [restoring, setRestoring] = useState<BackupAttributes | null>(null);
  const [deleting, setDeleting] = useState<BackupAttributes | null>(null);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [bulkDeleting, setBulkDeleting] = useState(false);
  const [outcome, setOutcome] = useState<BulkOutcome | null>(null);
  const [editingRetention, setEditingRetention] = useState(false);
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
  // Only what is shown and may be deleted counts as chosen: a backup gone or still being made does not.
  const selectable = useMemo(() => (shown ?? []).filter((backup) => !isInProgress(backup)), [shown]);
  const chosen = selectable.filter((backup) => selected.has(backup.uuid));
  const toggle = (uuid: string, on: boolean) =>
    setSelected((old) => {
      const next = new Set(old);
      if (on) next.add(uuid);
      else next.delete(uuid);
      return next;
    });

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
        <div className="section-tools">
          {canDelete ? (
            <button
              type="button"
              onClick={() => setEditingRetention(true)}
              disabled={retention.data === undefined}
            >
              Retention policy
            </button>
          ) : null}
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
      </div>
      {canDelete && retention.data !== undefined ? (
        <p className="muted small retention-summary" data-testid="retention-summary">
          Retention: {retentionSummary(retention.data.attributes)}
        </p>
      ) : null}
      {canDelete && retention.error !== null ? (
        <p className="muted small retention-summary">
          The retention policy could not be read: {errorMessage(retention.error)}
        </p>
      ) : null}
      {backups.isPending ? <Loading what="backups" /> : null}
      <RequestError error={backups.error} />
      <div role="status" className="bulk-result-region">
        {outcome === null ? null : (
          <BulkDeleteResultNotice outcome={outcome} onDismiss={() => setOutcome(null)} />
        )}
      </div>
      {canDelete && selectable.length > 0 ? (
        <div className="bulk-bar" role="group" aria-label="Selected backups">
          <label className="check">
            <input
              type="checkbox"
              checked={chosen.length === selectable.length}
              ref={(input) => {
                if (input !== null)
                  input.indeterminate = chosen.length > 0 && chosen.length < selectable.length;
              }}
              onChange={(event) =>
                setSelected(new Set(event.target.checked ? selectable.map((backup) => backup.uuid) : []))
              }
            />
            <span>Select all on this page</span>
          </label>
          <span className="muted small" aria-live="polite">
            {chosen.length === 0 ? 'None selected' : `${chosen.length} selected`}
          </span>
          <button
            type="button"
            className="danger"
            onClick={() => setBulkDeleting(true)}
            disabled={chosen.length === 0 || busy}
            title={busy ? 'The server is busy' : undefined}
          >
            Delete selected
          </button>
        </div>
      ) : null}
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
                className={canDelete ? 'backup selectable' : 'backup'}
                data-backup={backup.uuid}
                aria-label={`Backup ${backup.name}`}
              >
                {canDelete ? (
                  <input
                    type="checkbox"
                    className="backup-select"
                    aria-label={`Select ${backup.name}`}
                    checked={!working && selected.has(backup.uuid)}
                    disabled={working}
                    onChange={(event) => toggle(backup.uuid, event.target.checked)}
                  />
                ) : null}
                <div className="backup-head">
                  <span className="strong backup-name">{backup.name}</span>
                  {backup.is_automatic ? (
                    <span className="badge badge-automatic" title="Made by a schedule">
                      Automatic
                    </span>
                  ) : null}
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
                  {can('backup.download') && done ? (
                    <button type="button" onClick={() => navigate(browseHref(location, backup.uuid))}>
                      Browse files
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
                  {canDelete && !working ? (
                    <button type="button" onClick={() => lock.mutate(backup)} disabled={lock.isPending}>
                      {backup.is_locked ? 'Unlock' : 'Lock'}
                    </button>
                  ) : null}
                  {canDelete && !working ? (
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
      {browsing === null ? null : (
        <BackupFilesDialog
          key={browsing}
          id={id}
          uuid={browsing}
          known={backups.data?.data.find((backup) => backup.attributes.uuid === browsing)}
          can={can}
          busy={busy}
          onClose={() => navigate(browseHref(location, null))}
        />
      )}
      {restoring === null ? null : (
        <RestoreBackupDialog id={id} backup={restoring} onClose={() => setRestoring(null)} />
      )}
      {bulkDeleting ? (
        <BulkDeleteDialog
          id={id}
          backups={chosen}
          onClose={() => setBulkDeleting(false)}
          onDone={(result) => {
            setOutcome(result);
            setSelected(new Set());
          }}
        />
      ) : null}
      {editingRetention && retention.data !== undefined ? (
        <RetentionDialog
          id={id}
          policy={retention.data.attributes}
          onClose={() => setEditingRetention(false)}
        />
      ) : null}
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

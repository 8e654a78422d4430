import { useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client.ts';
import { keys, serverPath } from '../api/hooks.ts';
import type { Backup, BackupAttributes, BulkDeleteResult, List } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { useNotify } from '../components/Notices.tsx';
import { plural } from '../format.ts';

/** What a bulk delete did, by the backups' names. */
export interface BulkOutcome {
  deleted: { uuid: string; name: string }[];
  refused: { uuid: string; name: string; why: string; detail: string }[];
}

/** Why a backup was not deleted, in a word, from the status a single delete would have answered. */
function why(status: string): string {
  switch (status) {
    case '400':
      return 'locked';
    case '404':
      return 'not found';
    case '409':
      return 'busy';
    default:
      return `refused (${status})`;
  }
}

/** "a", "a and b", "a, b and c", each quoted. */
function names(items: { name: string }[]): string {
  const quoted = items.map((item) => `"${item.name}"`);
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1)}`;
}

interface BulkDeleteDialogProps {
  id: string;
  backups: BackupAttributes[];
  onDone: (outcome: BulkOutcome) => void;
  onClose: () => void;
}

/** The confirmation of a bulk delete, naming each backup (and those the server will refuse). */
export function BulkDeleteDialog({ id, backups, onDone, onClose }: BulkDeleteDialogProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const locked = backups.filter((backup) => backup.is_locked).length;
  return (
    <ConfirmDialog
      title={`Delete ${plural(backups.length, 'backup')}?`}
      message={
        <p>
          {backups.length === 1
            ? 'The backup and its archive are deleted for good.'
            : 'These backups and their archives are deleted for good.'}{' '}
          This cannot be undone.
        </p>
      }
      confirmLabel={`Delete ${plural(backups.length, 'backup')}`}
      danger
      onClose={onClose}
      onConfirm={async () => {
        const result = await api<BulkDeleteResult>(`${serverPath(id)}/backups/delete`, {
          method: 'POST',
          body: { backups: backups.map((backup) => backup.uuid) },
        });
        const nameOf = (uuid: string) => backups.find((backup) => backup.uuid === uuid)?.name ?? uuid;
        const outcome: BulkOutcome = {
          deleted: result.attributes.deleted.map((uuid) => ({ uuid, name: nameOf(uuid) })),
          refused: result.attributes.refused.map((refusal) => ({
            uuid: refusal.uuid,
            name: nameOf(refusal.uuid),
            why: why(refusal.status),
            detail: refusal.detail,
          })),
        };
        const gone = new Set(result.attributes.deleted);
        client.setQueriesData<List<Backup>>({ queryKey: keys.backups(id) }, (list) =>
          list === undefined
            ? list
            : { ...list, data: list.data.filter((b) => !gone.has(b.attributes.uuid)) },
        );
        void client.invalidateQueries({ queryKey: keys.backups(id) });
        void client.invalidateQueries({ queryKey: keys.retention(id) });
        notify(
          outcome.refused.length === 0
            ? `Deleted ${plural(outcome.deleted.length, 'backup')}.`
            : `Deleted ${plural(outcome.deleted.length, 'backup')}; ${outcome.refused.length} not deleted.`,
          outcome.refused.length === 0 ? 'info' : 'error',
        );
        onDone(outcome);
      }}
    >
      <ul className="bulk-list">
        {backups.map((backup) => (
          <li key={backup.uuid}>
            <span className="strong">{backup.name}</span>
            {backup.is_locked ? <span className="muted small"> — locked: it will be refused</span> : null}
          </li>
        ))}
      </ul>
      {locked === 0 ? null : (
        <p className="hint">
          A locked backup is not deleted; unlock it first. The others are deleted all the same.
        </p>
      )}
    </ConfirmDialog>
  );
}

/** What the last bulk delete did: what it deleted, and each backup it refused and why. */
export function BulkDeleteResultNotice({
  outcome,
  onDismiss,
}: {
  outcome: BulkOutcome;
  onDismiss: () => void;
}) {
  return (
    <div
      className={outcome.refused.length === 0 ? 'bulk-result' : 'bulk-result warning'}
      data-testid="bulk-result"
    >
      {outcome.deleted.length === 0 ? (
        <p>No backup was deleted.</p>
      ) : (
        <p>
          Deleted {plural(outcome.deleted.length, 'backup')}: {names(outcome.deleted)}.
        </p>
      )}
      {outcome.refused.length === 0 ? null : (
        <>
          <p>Not deleted:</p>
          <ul>
            {outcome.refused.map((refusal) => (
              <li key={refusal.uuid}>
                <span className="strong">&quot;{refusal.name}&quot;</span>: {refusal.why}. {refusal.detail}
              </li>
            ))}
          </ul>
        </>
      )}
      <button type="button" className="link-button" onClick={onDismiss}>
        Dismiss
      </button>
    </div>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ApiError, errorMessage, fieldError } from '../api/client.ts';
import { keys, serverPath } from '../api/hooks.ts';
import type { Backup, BackupAttributes, List } from '../api/types.ts';
import { Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { FormError, SubmitButton, TextField } from '../components/Form.tsx';

interface CreateBackupDialogProps {
  id: string;
  /** The backup just started (to announce it). */
  onStarted: (backup: BackupAttributes) => void;
  onClose: () => void;
}

/** Starts a backup by hand: its name, the files it leaves out, and whether it is locked. */
export function CreateBackupDialog({ id, onStarted, onClose }: CreateBackupDialogProps) {
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

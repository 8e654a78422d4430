import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, fieldError, formErrorBeside } from '../api/client.ts';
import { keys, serverPath } from '../api/hooks.ts';
import type { ScheduleAttributes, ScheduleTask } from '../api/types.ts';
import { Dialog } from '../components/Dialog.tsx';
import { Field } from '../components/Field.tsx';
import { FormError, SubmitButton, TextField, useRequiredFields } from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';

/** The longest wait before a task, in seconds (the API's limit). */
export const MAX_TIME_OFFSET = 900;

interface TaskDialogProps {
  id: string;
  schedule: ScheduleAttributes;
  /** The task to change; null to add one (last). */
  task: ScheduleTask['attributes'] | null;
  onClose: () => void;
}

/**
 * Adds a backup task to a schedule or changes one: the files the backup leaves out, how long to
 * wait before it, and whether the run goes on if it fails. Backups are the only tasks Aerie runs.
 */
export function TaskDialog({ id, schedule, task, onClose }: TaskDialogProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const required = useRequiredFields();
  const [payload, setPayload] = useState(task?.payload ?? '');
  const [offset, setOffset] = useState(String(task?.time_offset ?? 0));
  const [continueOnFailure, setContinueOnFailure] = useState(task?.continue_on_failure ?? false);
  const first = task === null ? schedule.relationships.tasks.data.length === 0 : task.sequence_id === 1;
  const save = useMutation({
    mutationFn: () => {
      const base = `${serverPath(id)}/schedules/${schedule.id}/tasks`;
      const body = {
        action: 'backup',
        payload,
        time_offset: Number(offset.trim()),
        continue_on_failure: continueOnFailure,
      };
      return api(task === null ? base : `${base}/${task.id}`, { method: 'POST', body });
    },
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: keys.schedules(id) });
      notify(
        task === null ? `Added a backup task to "${schedule.name}".` : `Saved task ${task.sequence_id}.`,
      );
      onClose();
    },
  });
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const filled = required.check(event.currentTarget, { time_offset: ['time offset', offset.trim()] });
    if (filled) save.mutate();
    else save.reset();
  };
  return (
    <Dialog
      title={
        task === null ? `Add a task to ${schedule.name}` : `Edit task ${task.sequence_id} of ${schedule.name}`
      }
      onClose={onClose}
      description={
        <p>
          The task backs up the server. Backups are the only tasks Aerie runs: it controls no server process,
          so it sends no power actions or console commands.
        </p>
      }
    >
      <form onSubmit={submit} noValidate>
        <Field
          label="Ignored files"
          error={fieldError(save.error, 'payload')}
          hint="Paths the backup leaves out, one a line, as in a .gitignore: *.log, /cache, logs/, !keep.log"
        >
          {(control) => (
            <textarea
              {...control}
              name="payload"
              rows={4}
              className="mono"
              value={payload}
              onChange={(event) => setPayload(event.target.value)}
              data-autofocus
            />
          )}
        </Field>
        <TextField
          label="Time offset (seconds)"
          name="time_offset"
          type="number"
          inputMode="numeric"
          min={0}
          max={MAX_TIME_OFFSET}
          step={1}
          required
          value={offset}
          onChange={setOffset}
          error={required.missing.time_offset ?? fieldError(save.error, 'time_offset')}
          hint={`How long to wait ${first ? 'after the run starts' : 'after the task before it'}, from 0 to ${MAX_TIME_OFFSET} (15 minutes).`}
        />
        <label className="check">
          <input
            type="checkbox"
            name="continue_on_failure"
            checked={continueOnFailure}
            onChange={(event) => setContinueOnFailure(event.target.checked)}
          />
          <span>
            Continue on failure (go on with the next task if this one fails; otherwise the run stops here)
          </span>
        </label>
        <FormError message={formErrorBeside(save.error, ['payload', 'time_offset'])} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <SubmitButton pending={save.isPending} pendingLabel="Saving…">
            {task === null ? 'Add task' : 'Save task'}
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

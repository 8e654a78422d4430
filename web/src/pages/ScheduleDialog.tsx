import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, fieldError, formErrorBeside } from '../api/client.ts';
import { keys, serverPath } from '../api/hooks.ts';
import type { Schedule, ScheduleAttributes } from '../api/types.ts';
import { Dialog } from '../components/Dialog.tsx';
import { FormError, SubmitButton, TextField, useRequiredFields } from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';
import { CRON_FIELDS, CRON_PRESETS, cronExpression, cronWords, presetOf, type CronFields } from '../cron.ts';

/** Each cron field: its label, its name in a sentence, and what it takes. */
const CRON_LABELS: Record<(typeof CRON_FIELDS)[number], { label: string; name: string; hint: string }> = {
  minute: { label: 'Minute', name: 'minute', hint: '0–59' },
  hour: { label: 'Hour', name: 'hour', hint: '0–23' },
  day_of_month: { label: 'Day of month', name: 'day of month', hint: '1–31, L' },
  month: { label: 'Month', name: 'month', hint: '1–12, JAN' },
  day_of_week: { label: 'Day of week', name: 'day of week', hint: '0–7, MON' },
};

const NIGHTLY = CRON_PRESETS.find((preset) => preset.id === 'nightly')?.cron ?? {
  minute: '0',
  hour: '3',
  day_of_month: '*',
  month: '*',
  day_of_week: '*',
};

interface ScheduleDialogProps {
  id: string;
  /** The schedule to change; null to create one. */
  schedule: ScheduleAttributes | null;
  onClose: () => void;
}

/** Creates a schedule or changes one: its name, when it runs (five cron fields, or a preset), its switches. */
export function ScheduleDialog({ id, schedule, onClose }: ScheduleDialogProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const required = useRequiredFields();
  const [name, setName] = useState(schedule?.name ?? '');
  const [cron, setCron] = useState<CronFields>(schedule?.cron ?? NIGHTLY);
  const [active, setActive] = useState(schedule?.is_active ?? true);
  const [onlyWhenOnline, setOnlyWhenOnline] = useState(schedule?.only_when_online ?? false);
  const save = useMutation({
    mutationFn: () => {
      const body = {
        name: name.trim(),
        is_active: active,
        only_when_online: onlyWhenOnline,
        ...Object.fromEntries(CRON_FIELDS.map((field) => [field, cron[field].trim()])),
      };
      return api<Schedule>(`${serverPath(id)}/schedules${schedule === null ? '' : `/${schedule.id}`}`, {
        method: 'POST',
        body,
      });
    },
    onSuccess: (result) => {
      void client.invalidateQueries({ queryKey: keys.schedules(id) });
      notify(
        schedule === null
          ? `Created schedule "${result.attributes.name}". Add a backup task for it to do.`
          : `Saved schedule "${result.attributes.name}".`,
      );
      onClose();
    },
  });

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const fields: Record<string, readonly [string, string]> = { name: ['name', name.trim()] };
    for (const field of CRON_FIELDS) fields[field] = [CRON_LABELS[field].name, cron[field].trim()];
    if (required.check(event.currentTarget, fields)) save.mutate();
    else save.reset();
  };

  const preset = presetOf(cron);
  const words = cronWords(cron);
  const complete = CRON_FIELDS.every((field) => cron[field].trim() !== '');
  const error = (field: string) => required.missing[field] ?? fieldError(save.error, field);

  return (
    <Dialog title={schedule === null ? 'Create a schedule' : `Edit ${schedule.name}`} onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <TextField
          label="Name"
          name="name"
          maxLength={191}
          required
          value={name}
          onChange={setName}
          error={error('name')}
          data-autofocus
        />
        <fieldset className="cron">
          <legend>When it runs</legend>
          <div className="presets" role="group" aria-label="Presets">
            {CRON_PRESETS.map((item) => (
              <button
                key={item.id}
                type="button"
                className="chip"
                aria-pressed={preset === item.id}
                onClick={() => setCron(item.cron)}
              >
                {item.label}
              </button>
            ))}
          </div>
          <div className="cron-fields">
            {CRON_FIELDS.map((field) => (
              <TextField
                key={field}
                label={CRON_LABELS[field].label}
                name={field}
                className="mono"
                required
                autoComplete="off"
                spellCheck={false}
                maxLength={191}
                value={cron[field]}
                onChange={(value) => setCron((old) => ({ ...old, [field]: value }))}
                hint={CRON_LABELS[field].hint}
                error={error(field)}
              />
            ))}
          </div>
          <p className="cron-words" aria-live="polite">
            {!complete ? (
              'Fill in all five fields.'
            ) : (
              <>
                <code>{cronExpression(cron)}</code>
                {words === null ? null : <> · {words}</>}
              </>
            )}
          </p>
          <p className="hint">
            Cron fields: a number, <code>*</code> for any, <code>*/15</code> for every 15th, lists{' '}
            <code>1,15</code> and ranges <code>1-5</code>; days of the week from 0 (Sunday) to 7 (Sunday
            again) or <code>MON</code>–<code>SUN</code>. Times are in the server&apos;s time zone; the next
            run is shown in yours.
          </p>
        </fieldset>
        <label className="check">
          <input
            type="checkbox"
            name="is_active"
            checked={active}
            onChange={(event) => setActive(event.target.checked)}
          />
          <span>Active (runs by itself at these times; an inactive one runs only when you run it now)</span>
        </label>
        <label className="check">
          <input
            type="checkbox"
            name="only_when_online"
            checked={onlyWhenOnline}
            onChange={(event) => setOnlyWhenOnline(event.target.checked)}
          />
          <span>
            Only when the server is online (skip a run while it is busy restoring, installing or suspended)
          </span>
        </label>
        <FormError message={formErrorBeside(save.error, ['name', ...CRON_FIELDS])} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <SubmitButton pending={save.isPending} pendingLabel="Saving…">
            {schedule === null ? 'Create schedule' : 'Save schedule'}
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

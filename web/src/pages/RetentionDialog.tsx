import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { api, fieldError, formErrorBeside } from '../api/client.ts';
import {
  keys,
  RETENTION_RULES,
  serverPath,
  useRetentionPreview,
  type RetentionRule,
  type RetentionRules,
} from '../api/hooks.ts';
import type { RetentionPolicy, RetentionPreview } from '../api/types.ts';
import { Dialog } from '../components/Dialog.tsx';
import { FormError, RequestError, SubmitButton, TextField } from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Time } from '../components/Time.tsx';
import { plural } from '../format.ts';

/** The most a rule may keep (the API's limit). */
const MAX_KEEP = 10_000;

const RULES: Record<RetentionRule, { label: string; hint: string; word: (n: number) => string }> = {
  keep_last: { label: 'Last', hint: 'The N newest', word: (n) => `the last ${n}` },
  keep_hourly: { label: 'Hourly', hint: 'The newest of each of N hours', word: (n) => `${n} hourly` },
  keep_daily: { label: 'Daily', hint: 'The newest of each of N days', word: (n) => `${n} daily` },
  keep_weekly: { label: 'Weekly', hint: 'The newest of each of N weeks', word: (n) => `${n} weekly` },
  keep_monthly: { label: 'Monthly', hint: 'The newest of each of N months', word: (n) => `${n} monthly` },
  keep_yearly: { label: 'Yearly', hint: 'The newest of each of N years', word: (n) => `${n} yearly` },
};

/** "Keeps automatic backups: the last 4, 7 daily and 4 weekly.", or that there is no policy. */
export function retentionSummary(policy: RetentionPolicy['attributes']): string {
  const rules = RETENTION_RULES.flatMap((rule) => {
    const count = policy[rule];
    return count === null || count === 0 ? [] : [RULES[rule].word(count)];
  });
  if (rules.length === 0) return 'Off: automatic backups are kept until deleted.';
  const list = rules.length === 1 ? rules[0] : `${rules.slice(0, -1).join(', ')} and ${rules.at(-1)}`;
  return `Keeps automatic backups: ${list}.`;
}

type Values = Record<RetentionRule, string>;

/** The rules the form holds (empty: off), or null while one of them is not a count. */
function rulesOf(values: Values): RetentionRules | null {
  const rules: RetentionRules = {};
  for (const rule of RETENTION_RULES) {
    const text = values[rule].trim();
    if (text === '') continue;
    if (!/^\d{1,5}$/.test(text) || Number(text) > MAX_KEEP) return null;
    rules[rule] = Number(text);
  }
  return rules;
}

/** `value`, once it has not changed for `ms`. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

type Entry = RetentionPreview['attributes']['keep'][number];

function PreviewList({ entries, empty, kept }: { entries: Entry[]; empty: string; kept: boolean }) {
  if (entries.length === 0) return <p className="muted small">{empty}</p>;
  return (
    <ul className="retention-list">
      {entries.map((entry) => (
        <li key={entry.uuid} data-backup={entry.uuid}>
          <span className="strong">{entry.name}</span>{' '}
          <span className="muted small">
            <Time iso={entry.created_at} />
          </span>{' '}
          {entry.is_automatic ? <span className="badge">Automatic</span> : null}
          {kept ? (
            <ul className="tag-list retention-reasons" aria-label="Why it is kept">
              {entry.reasons.map((reason) => (
                <li key={reason}>
                  <code>{reason}</code>
                </li>
              ))}
            </ul>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

interface RetentionDialogProps {
  id: string;
  policy: RetentionPolicy['attributes'];
  onClose: () => void;
}

/**
 * A server's retention policy: the six counts (empty: off), with a preview, as they are typed, of
 * the backups it would keep (and why) and delete, before it is saved.
 */
export function RetentionDialog({ id, policy, onClose }: RetentionDialogProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const [values, setValues] = useState<Values>(
    () =>
      Object.fromEntries(
        RETENTION_RULES.map((rule) => [rule, policy[rule] === null ? '' : String(policy[rule])]),
      ) as Values,
  );
  const rules = useMemo(() => rulesOf(values), [values]);
  const settled = useSettled(rules, 250);
  const preview = useRetentionPreview(id, settled);
  const save = useMutation({
    mutationFn: () => {
      const body = Object.fromEntries(
        RETENTION_RULES.map((rule) => {
          const text = values[rule].trim();
          // Anything but a count is sent as written, for the API to say what is wrong with it.
          return [rule, text === '' ? null : /^\d+$/.test(text) ? Number(text) : text];
        }),
      );
      return api<RetentionPolicy>(`${serverPath(id)}/backups/retention`, { method: 'PUT', body });
    },
    onSuccess: (result) => {
      client.setQueryData(keys.retention(id), result);
      void client.invalidateQueries({ queryKey: keys.retention(id) });
      notify(`Saved the retention policy. ${retentionSummary(result.attributes)}`);
      onClose();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  const shown = preview.data?.attributes;
  const stale = preview.isFetching || settled !== rules || rules === null;

  return (
    <Dialog title="Retention policy" onClose={onClose} className="dialog-wide">
      <form onSubmit={submit} noValidate>
        <p className="hint">
          Applied to automatic backups (those a schedule makes) each time one succeeds. Backups made by hand
          and locked backups are never deleted by it. Leave a rule empty to turn it off; with every rule off,
          nothing is deleted.
          {shown === undefined ? null : <> Hours, days and weeks are counted in {shown.time_zone}.</>}
        </p>
        <fieldset className="retention-rules">
          <legend>Keep</legend>
          {RETENTION_RULES.map((rule) => (
            <TextField
              key={rule}
              label={RULES[rule].label}
              name={rule}
              inputMode="numeric"
              autoComplete="off"
              value={values[rule]}
              onChange={(value) => setValues((old) => ({ ...old, [rule]: value }))}
              hint={RULES[rule].hint}
              error={fieldError(save.error, rule)}
            />
          ))}
        </fieldset>
        <section
          className={stale ? 'retention-preview stale' : 'retention-preview'}
          aria-labelledby="retention-preview-heading"
          aria-busy={stale}
        >
          <h3 id="retention-preview-heading">Preview: if it were applied now</h3>
          {rules === null ? (
            <p className="field-error">
              Each rule is a whole number from 0 to {MAX_KEEP.toLocaleString('en')}, or empty.
            </p>
          ) : null}
          <RequestError error={preview.error} />
          {shown === undefined ? (
            preview.isPending && rules !== null ? (
              <p className="muted">Loading the preview…</p>
            ) : null
          ) : (
            <div className="retention-columns">
              <div>
                <h4>Kept ({shown.keep.length})</h4>
                <PreviewList entries={shown.keep} empty="Nothing is kept." kept />
              </div>
              <div>
                <h4>Would be deleted ({shown.delete.length})</h4>
                <PreviewList entries={shown.delete} empty="Nothing would be deleted." kept={false} />
              </div>
            </div>
          )}
          <p className="visually-hidden" aria-live="polite">
            {shown === undefined || stale
              ? ''
              : `The policy keeps ${plural(shown.keep.length, 'backup')} and deletes ${plural(shown.delete.length, 'backup')}.`}
          </p>
        </section>
        <FormError message={formErrorBeside(save.error, RETENTION_RULES)} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <SubmitButton pending={save.isPending} pendingLabel="Saving…">
            Save policy
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, ApiError, errorMessage, fieldError } from '../api/client.ts';
import { keys, useApiKeys } from '../api/hooks.ts';
import type { ApiKey, CreatedApiKey } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { CopyButton } from '../components/CopyButton.tsx';
import { Field } from '../components/Field.tsx';
import { FormError, RequestError, SubmitButton, TextField } from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading, Page } from '../components/Page.tsx';
import { Time } from '../components/Time.tsx';

/** The lines of the allowed-IPs box, as the API gets them: one entry a line, blanks dropped. */
function ipLines(text: string): string[] {
  return text
    .split(/[\n,]+/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The API's 422 about allowed_ips (or one of its entries, `allowed_ips.N`), naming the entry. */
function ipErrors(error: unknown, ips: string[]): string | undefined {
  if (!(error instanceof ApiError) || error.status !== 422) return undefined;
  const messages = error.errors.flatMap(({ meta }) => {
    if (meta === undefined) return [];
    const [field, index] = meta.source_field.split('.');
    if (field !== 'allowed_ips') return [];
    const entry = index === undefined ? undefined : ips[Number(index)];
    return [
      entry !== undefined && meta.rule === 'ip'
        ? `“${entry}” is not an IP address or a CIDR range.`
        : meta.message,
    ];
  });
  return messages.length === 0 ? undefined : messages.join(' ');
}

function CreateKeyForm({ onCreated }: { onCreated: (key: CreatedApiKey) => void }) {
  const client = useQueryClient();
  const [description, setDescription] = useState('');
  const [ips, setIps] = useState('');
  const create = useMutation({
    mutationFn: (body: { description: string; allowed_ips: string[] }) =>
      api<CreatedApiKey>('/api/client/account/api-keys', { method: 'POST', body }),
    onSuccess: (key) => {
      setDescription('');
      setIps('');
      onCreated(key);
      void client.invalidateQueries({ queryKey: keys.apiKeys });
    },
  });
  const sent = create.variables?.allowed_ips ?? [];
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ description: description.trim(), allowed_ips: ipLines(ips) });
  };
  const otherError =
    create.error !== null && !(create.error instanceof ApiError && create.error.status === 422)
      ? errorMessage(create.error)
      : null;
  return (
    <form className="card" onSubmit={submit} aria-labelledby="create-key-heading" noValidate>
      <h2 id="create-key-heading" tabIndex={-1}>
        Create an API key
      </h2>
      <TextField
        label="Description"
        error={fieldError(create.error, 'description')}
        hint="What the key is for; up to 500 characters."
        name="description"
        value={description}
        onChange={setDescription}
      />
      <Field
        label="Allowed IPs"
        error={ipErrors(create.error, sent)}
        hint="One address or CIDR range a line (IPv4 or IPv6), up to 50. Leave empty to allow any address."
      >
        {(control) => (
          <textarea
            {...control}
            name="allowed_ips"
            rows={3}
            value={ips}
            onChange={(e) => setIps(e.target.value)}
          />
        )}
      </Field>
      <FormError message={otherError} />
      <div className="actions">
        <SubmitButton pending={create.isPending} pendingLabel="Creating…">
          Create key
        </SubmitButton>
      </div>
    </form>
  );
}

/** The token of a key just made: shown here, once, and nowhere else ever again. */
function NewKeySecret({ created, onDone }: { created: CreatedApiKey; onDone: () => void }) {
  const token = created.attributes.identifier + created.meta.secret_token;
  const field = useRef<HTMLInputElement>(null);
  // The one thing to do now is to copy it: the focus goes there (and selects it).
  useEffect(() => field.current?.focus(), [token]);
  return (
    <section className="card secret" aria-labelledby="secret-heading" role="region">
      <h2 id="secret-heading">Your new API key</h2>
      <p>
        Copy it now: this is the only time Aerie shows it. It cannot be shown again, only replaced by a new
        key.
      </p>
      <div className="secret-row">
        <label htmlFor="new-key-token" className="visually-hidden">
          API key token
        </label>
        <input
          id="new-key-token"
          ref={field}
          className="mono"
          readOnly
          value={token}
          onFocus={(e) => e.target.select()}
        />
        <CopyButton text={token} label="Copy key" />
      </div>
      <p className="muted small">
        Use it as <code>Authorization: Bearer {created.attributes.identifier}…</code>
      </p>
      <button type="button" onClick={onDone}>
        I have saved it
      </button>
    </section>
  );
}

export function ApiKeysPage() {
  const client = useQueryClient();
  const notify = useNotify();
  const list = useApiKeys();
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [deleting, setDeleting] = useState<ApiKey | null>(null);
  return (
    <Page title="API keys">
      <p className="lead">
        Keys let scripts and other clients use the API as you. Each key&apos;s secret is shown once, when it
        is made.
      </p>
      {created === null ? null : (
        <NewKeySecret
          created={created}
          onDone={() => {
            setCreated(null);
            document.getElementById('create-key-heading')?.focus();
          }}
        />
      )}
      <CreateKeyForm onCreated={setCreated} />
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your keys</h2>
        {list.isPending ? <Loading what="API keys" /> : null}
        <RequestError error={list.error} />
        {list.data === undefined ? null : list.data.data.length === 0 ? (
          <p className="empty">You have no API keys.</p>
        ) : (
          <table className="table keys">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Description</th>
                <th scope="col">Allowed IPs</th>
                <th scope="col">Last used</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map(({ attributes: key }) => (
                <tr key={key.identifier} data-key={key.identifier}>
                  <td data-label="Key">
                    <code>{key.identifier}</code>
                  </td>
                  <td data-label="Description">
                    {key.description === '' ? <span className="muted">—</span> : key.description}
                  </td>
                  <td data-label="Allowed IPs">
                    {key.allowed_ips.length === 0 ? (
                      <span className="muted">any</span>
                    ) : (
                      key.allowed_ips.join(', ')
                    )}
                  </td>
                  <td data-label="Last used">
                    {key.last_used_at === null ? (
                      <span className="muted">never</span>
                    ) : (
                      <Time iso={key.last_used_at} />
                    )}
                  </td>
                  <td data-label="Created">
                    <Time iso={key.created_at} />
                  </td>
                  <td className="row-actions">
                    <button
                      type="button"
                      className="danger"
                      onClick={() => setDeleting({ object: 'api_key', attributes: key })}
                      aria-label={`Delete key ${key.identifier}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {deleting === null ? null : (
        <ConfirmDialog
          title="Delete this API key?"
          message={
            <p>
              Anything using <code>{deleting.attributes.identifier}</code>
              {deleting.attributes.description === '' ? '' : ` (${deleting.attributes.description})`} stops
              working at once. This cannot be undone.
            </p>
          }
          confirmLabel="Delete key"
          danger
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api(`/api/client/account/api-keys/${encodeURIComponent(deleting.attributes.identifier)}`, {
              method: 'DELETE',
            });
            await client.invalidateQueries({ queryKey: keys.apiKeys });
            notify(`Deleted key ${deleting.attributes.identifier}.`);
          }}
        />
      )}
    </Page>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, fieldError, formError } from '../api/client.ts';
import { keys, serverPath, useAccount, useSubusers } from '../api/hooks.ts';
import type { Subuser } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { Dialog } from '../components/Dialog.tsx';
import { FormError, RequestError, SubmitButton, TextField, useRequiredFields } from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading } from '../components/Page.tsx';
import { PermissionChecklist } from '../components/PermissionChecklist.tsx';
import { sortPermissions, type Can } from '../permissions.ts';

function permissionsError(error: unknown): string | undefined {
  return fieldError(error, 'permissions');
}

function SubuserDialog({
  id,
  can,
  subuser,
  onClose,
}: {
  id: string;
  can: Can;
  subuser: Subuser['attributes'] | null;
  onClose: () => void;
}) {
  const client = useQueryClient();
  const notify = useNotify();
  const [email, setEmail] = useState('');
  const [permissions, setPermissions] = useState<string[]>(subuser?.permissions ?? []);
  const required = useRequiredFields();
  const save = useMutation({
    mutationFn: () =>
      subuser === null
        ? api<Subuser>(`${serverPath(id)}/users`, {
            method: 'POST',
            body: { email: email.trim(), permissions },
          })
        : api<Subuser>(`${serverPath(id)}/users/${subuser.uuid}`, { method: 'POST', body: { permissions } }),
    onSuccess: (result) => {
      void client.invalidateQueries({ queryKey: keys.subusers(id) });
      notify(
        subuser === null
          ? `${result.attributes.username} can now use this server.`
          : `Saved ${result.attributes.username}'s permissions.`,
      );
      onClose();
    },
  });
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    // A new subuser is named by email; the permissions may be none (added now, granted later).
    const filled =
      subuser !== null || required.check(event.currentTarget, { email: ['email address', email.trim()] });
    if (filled) save.mutate();
    else save.reset();
  };
  const error = formError(save.error);
  return (
    <Dialog
      title={subuser === null ? 'Add a subuser' : `Permissions of ${subuser.username}`}
      onClose={onClose}
    >
      <form onSubmit={submit} noValidate>
        {subuser === null ? (
          <TextField
            label="Email address"
            error={required.missing.email ?? fieldError(save.error, 'email')}
            hint="Of someone who already has an account here; Aerie sends no invitations."
            name="email"
            type="email"
            autoComplete="off"
            required
            value={email}
            onChange={setEmail}
            data-autofocus
          />
        ) : null}
        <PermissionChecklist
          value={permissions}
          onChange={setPermissions}
          can={can}
          error={permissionsError(save.error)}
        />
        <FormError message={error} />
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <SubmitButton pending={save.isPending} pendingLabel="Saving…">
            {subuser === null ? 'Add subuser' : 'Save permissions'}
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

export function SubusersTab({ id, can }: { id: string; can: Can }) {
  const client = useQueryClient();
  const notify = useNotify();
  const account = useAccount();
  const list = useSubusers(id, true);
  const [editing, setEditing] = useState<Subuser['attributes'] | 'new' | null>(null);
  const [removing, setRemoving] = useState<Subuser['attributes'] | null>(null);
  const me = account.data?.attributes.uuid;
  return (
    <section aria-labelledby="subusers-heading">
      <div className="section-head">
        <h2 id="subusers-heading">Subusers</h2>
        {can('user.create') ? (
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            Add subuser
          </button>
        ) : null}
      </div>
      {list.isPending ? <Loading what="subusers" /> : null}
      <RequestError error={list.error} />
      {list.data === undefined ? null : list.data.data.length === 0 ? (
        <p className="empty">Nobody else can use this server.</p>
      ) : (
        <table className="table subusers">
          <thead>
            <tr>
              <th scope="col">User</th>
              <th scope="col">Permissions</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.data.map(({ attributes: subuser }) => {
              const own = subuser.uuid === me;
              return (
                <tr key={subuser.uuid} data-subuser={subuser.username}>
                  <td data-label="User">
                    <span className="strong">{subuser.username}</span>
                    {own ? <span className="badge">you</span> : null}
                    <div className="muted small">{subuser.email}</div>
                  </td>
                  <td data-label="Permissions">
                    {subuser.permissions.length === 0 ? (
                      <span className="muted">none</span>
                    ) : (
                      <ul className="tag-list">
                        {sortPermissions(subuser.permissions).map((permission) => (
                          <li key={permission}>
                            <code>{permission}</code>
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td className="row-actions">
                    {can('user.update') && !own ? (
                      <button
                        type="button"
                        onClick={() => setEditing(subuser)}
                        aria-label={`Edit permissions of ${subuser.username}`}
                      >
                        Edit
                      </button>
                    ) : null}
                    {can('user.delete') && !own ? (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => setRemoving(subuser)}
                        aria-label={`Remove ${subuser.username}`}
                      >
                        Remove
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {editing === null ? null : (
        <SubuserDialog
          id={id}
          can={can}
          subuser={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
        />
      )}
      {removing === null ? null : (
        <ConfirmDialog
          title={`Remove ${removing.username}?`}
          message={<p>{removing.username} will no longer be able to use this server.</p>}
          confirmLabel="Remove subuser"
          danger
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await api(`${serverPath(id)}/users/${removing.uuid}`, { method: 'DELETE' });
            await client.invalidateQueries({ queryKey: keys.subusers(id) });
            notify(`Removed ${removing.username}.`);
          }}
        />
      )}
    </section>
  );
}

import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ApiError, errorMessage, fieldError } from '../api/client.ts';
import { keys, useAccount } from '../api/hooks.ts';
import type { Account, RecoveryTokens, TwoFactorSetup } from '../api/types.ts';
import { CopyButton } from '../components/CopyButton.tsx';
import { Field } from '../components/Field.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading, Page } from '../components/Page.tsx';

/** A failure that is not about one field (a wrong password is a 400 with a sentence). */
function formError(error: unknown): string | null {
  if (error === null) return null;
  if (error instanceof ApiError && error.status === 422 && Object.keys(error.fields).length > 0) return null;
  return errorMessage(error);
}

function Details({ account }: { account: Account }) {
  const a = account.attributes;
  const name = `${a.first_name} ${a.last_name}`.trim();
  return (
    <section className="card" aria-labelledby="details-heading">
      <h2 id="details-heading">Details</h2>
      <dl className="pairs">
        <dt>Username</dt>
        <dd>{a.username}</dd>
        <dt>Email</dt>
        <dd data-field="email">{a.email}</dd>
        {name === '' ? null : (
          <>
            <dt>Name</dt>
            <dd>{name}</dd>
          </>
        )}
        <dt>Role</dt>
        <dd>{a.admin ? 'Administrator' : 'User'}</dd>
        <dt>Two-factor authentication</dt>
        <dd>{a.use_totp === true ? 'On' : 'Off'}</dd>
        <dt>User ID</dt>
        <dd>
          <code>{a.uuid}</code>
        </dd>
      </dl>
    </section>
  );
}

function EmailForm({ account }: { account: Account }) {
  const client = useQueryClient();
  const notify = useNotify();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const change = useMutation({
    mutationFn: () =>
      api('/api/client/account/email', { method: 'PUT', body: { email: email.trim(), password } }),
    onSuccess: () => {
      setEmail('');
      setPassword('');
      notify('Your email address is changed.');
      void client.invalidateQueries({ queryKey: keys.account });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate();
  };
  const error = formError(change.error);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="email-heading" noValidate>
      <h2 id="email-heading">Change email</h2>
      <Field
        label="New email address"
        error={fieldError(change.error, 'email')}
        hint={`Now: ${account.attributes.email}`}
      >
        {(control) => (
          <input
            {...control}
            name="email"
            type="email"
            autoComplete="email"
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        )}
      </Field>
      <Field label="Current password" error={fieldError(change.error, 'password')}>
        {(control) => (
          <input
            {...control}
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        )}
      </Field>
      {error === null ? null : (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={change.isPending}>
          {change.isPending ? 'Saving…' : 'Change email'}
        </button>
      </div>
    </form>
  );
}

function PasswordForm() {
  const notify = useNotify();
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const change = useMutation({
    mutationFn: () =>
      api('/api/client/account/password', {
        method: 'PUT',
        body: { current_password: current, password, password_confirmation: confirmation },
      }),
    onSuccess: () => {
      setCurrent('');
      setPassword('');
      setConfirmation('');
      notify('Your password is changed.');
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const differs = password !== confirmation;
    setMismatch(differs);
    if (!differs) change.mutate();
  };
  const error = formError(change.error);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="password-heading" noValidate>
      <h2 id="password-heading">Change password</h2>
      <Field label="Current password" error={fieldError(change.error, 'current_password')}>
        {(control) => (
          <input
            {...control}
            name="current_password"
            type="password"
            autoComplete="current-password"
            value={current}
            onChange={(e) => setCurrent(e.target.value)}
          />
        )}
      </Field>
      <Field label="New password" error={fieldError(change.error, 'password')} hint="At least 8 characters.">
        {(control) => (
          <input
            {...control}
            name="password"
            type="password"
            autoComplete="new-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        )}
      </Field>
      <Field
        label="Confirm new password"
        error={mismatch ? 'The two new passwords differ.' : fieldError(change.error, 'password_confirmation')}
      >
        {(control) => (
          <input
            {...control}
            name="password_confirmation"
            type="password"
            autoComplete="new-password"
            value={confirmation}
            onChange={(e) => setConfirmation(e.target.value)}
          />
        )}
      </Field>
      {error === null ? null : (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={change.isPending}>
          {change.isPending ? 'Saving…' : 'Change password'}
        </button>
      </div>
    </form>
  );
}

function RecoveryTokensShown({ tokens, onDone }: { tokens: string[]; onDone: () => void }) {
  return (
    <div className="secret" role="region" aria-labelledby="tokens-heading">
      <h3 id="tokens-heading">Your recovery tokens</h3>
      <p>
        Two-factor authentication is on. Keep these tokens somewhere safe: each logs you in once if you lose
        your authenticator. They are shown only now.
      </p>
      <ul className="tokens mono">
        {tokens.map((token) => (
          <li key={token}>{token}</li>
        ))}
      </ul>
      <div className="actions">
        <CopyButton text={tokens.join('\n')} label="Copy tokens" />
        <button type="button" className="primary" onClick={onDone}>
          I have saved them
        </button>
      </div>
    </div>
  );
}

function EnableTwoFactor({ onEnabled }: { onEnabled: (tokens: string[]) => void }) {
  const client = useQueryClient();
  const [setup, setSetup] = useState<TwoFactorSetup['data'] | null>(null);
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const start = useMutation({
    mutationFn: () => api<TwoFactorSetup>('/api/client/account/two-factor'),
    onSuccess: (response) => setSetup(response.data),
  });
  const enable = useMutation({
    mutationFn: () =>
      api<RecoveryTokens>('/api/client/account/two-factor', {
        method: 'POST',
        body: { code: code.replace(/\s+/g, ''), password },
      }),
    onSuccess: (response) => {
      setSetup(null);
      onEnabled(response.attributes.tokens);
      void client.invalidateQueries({ queryKey: keys.account });
    },
  });
  if (setup === null)
    return (
      <>
        <p>Add a second step to logging in: a code from an authenticator app on your phone.</p>
        {start.error === null ? null : (
          <p className="error" role="alert">
            {errorMessage(start.error)}
          </p>
        )}
        <button type="button" className="primary" onClick={() => start.mutate()} disabled={start.isPending}>
          {start.isPending ? 'Preparing…' : 'Set up two-factor authentication'}
        </button>
      </>
    );
  const error = formError(enable.error);
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        enable.mutate();
      }}
      noValidate
    >
      <ol className="steps">
        <li>
          <p>Scan this QR code with your authenticator app:</p>
          <img
            className="qr"
            src={setup.qr_code}
            alt="QR code to add Aerie to an authenticator app"
            width={200}
            height={200}
          />
        </li>
        <li>
          <p>Or enter this secret in the app by hand:</p>
          <p className="secret-row">
            <code className="mono" data-secret>
              {setup.secret}
            </code>
            <CopyButton text={setup.secret} label="Copy secret" />
          </p>
        </li>
        <li>
          <p>Then enter the code the app shows, and your password:</p>
          <Field label="Authentication code" error={fieldError(enable.error, 'code')}>
            {(control) => (
              <input
                {...control}
                name="code"
                inputMode="numeric"
                autoComplete="one-time-code"
                value={code}
                onChange={(e) => setCode(e.target.value)}
              />
            )}
          </Field>
          <Field label="Password" error={fieldError(enable.error, 'password')}>
            {(control) => (
              <input
                {...control}
                name="password"
                type="password"
                autoComplete="current-password"
                value={password}
                onChange={(e) => setPassword(e.target.value)}
              />
            )}
          </Field>
        </li>
      </ol>
      {error === null ? null : (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="button" onClick={() => setSetup(null)}>
          Cancel
        </button>
        <button type="submit" className="primary" disabled={enable.isPending}>
          {enable.isPending ? 'Turning on…' : 'Turn on two-factor authentication'}
        </button>
      </div>
    </form>
  );
}

function DisableTwoFactor() {
  const client = useQueryClient();
  const notify = useNotify();
  const [password, setPassword] = useState('');
  const disable = useMutation({
    mutationFn: () => api('/api/client/account/two-factor/disable', { method: 'POST', body: { password } }),
    onSuccess: () => {
      setPassword('');
      notify('Two-factor authentication is off.');
      void client.invalidateQueries({ queryKey: keys.account });
    },
  });
  const error = formError(disable.error);
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        disable.mutate();
      }}
      noValidate
    >
      <p>Two-factor authentication is on: logging in asks for a code from your authenticator app.</p>
      <Field
        label="Password"
        error={fieldError(disable.error, 'password')}
        hint="To turn it off, confirm your password."
      >
        {(control) => (
          <input
            {...control}
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        )}
      </Field>
      {error === null ? null : (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button type="submit" className="danger" disabled={disable.isPending}>
          {disable.isPending ? 'Turning off…' : 'Turn off two-factor authentication'}
        </button>
      </div>
    </form>
  );
}

function TwoFactor({ account }: { account: Account }) {
  const [tokens, setTokens] = useState<string[] | null>(null);
  return (
    <section className="card" aria-labelledby="two-factor-heading">
      <h2 id="two-factor-heading">Two-factor authentication</h2>
      {tokens !== null ? (
        <RecoveryTokensShown tokens={tokens} onDone={() => setTokens(null)} />
      ) : account.attributes.use_totp === true ? (
        <DisableTwoFactor />
      ) : (
        <EnableTwoFactor onEnabled={setTokens} />
      )}
    </section>
  );
}

export function AccountPage() {
  const account = useAccount();
  return (
    <Page title="Account">
      {account.data === undefined ? (
        <Loading what="your account" />
      ) : (
        <div className="grid">
          <Details account={account.data} />
          <TwoFactor account={account.data} />
          <EmailForm account={account.data} />
          <PasswordForm />
        </div>
      )}
    </Page>
  );
}

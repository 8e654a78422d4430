import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, fieldError, formError } from '../api/client.ts';
import { keys, useAccount } from '../api/hooks.ts';
import type { Account, RecoveryTokens, TwoFactorSetup } from '../api/types.ts';
import { CopyButton } from '../components/CopyButton.tsx';
import {
  FormError,
  PasswordField,
  RequestError,
  SubmitButton,
  TextField,
  useRequiredFields,
} from '../components/Form.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading, Page } from '../components/Page.tsx';

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
  const required = useRequiredFields();
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
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const filled = required.check(event.currentTarget, {
      email: ['new email address', email.trim()],
      password: ['current password', password],
    });
    if (filled) change.mutate();
    else change.reset();
  };
  const error = formError(change.error);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="email-heading" noValidate>
      <h2 id="email-heading">Change email</h2>
      <TextField
        label="New email address"
        error={required.missing.email ?? fieldError(change.error, 'email')}
        hint={`Now: ${account.attributes.email}`}
        name="email"
        type="email"
        autoComplete="email"
        required
        value={email}
        onChange={setEmail}
      />
      <PasswordField
        label="Current password"
        name="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={setPassword}
        error={required.missing.password ?? fieldError(change.error, 'password')}
      />
      <FormError message={error} />
      <div className="actions">
        <SubmitButton pending={change.isPending} pendingLabel="Saving…">
          Change email
        </SubmitButton>
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
  const required = useRequiredFields();
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
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const filled = required.check(event.currentTarget, {
      current_password: ['current password', current],
      password: ['new password', password],
      password_confirmation: ['new password confirmation', confirmation],
    });
    const differs = filled && password !== confirmation;
    setMismatch(differs);
    if (filled && !differs) change.mutate();
    else change.reset();
  };
  const error = formError(change.error);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="password-heading" noValidate>
      <h2 id="password-heading">Change password</h2>
      <PasswordField
        label="Current password"
        name="current_password"
        autoComplete="current-password"
        required
        value={current}
        onChange={setCurrent}
        error={required.missing.current_password ?? fieldError(change.error, 'current_password')}
      />
      <PasswordField
        label="New password"
        name="password"
        autoComplete="new-password"
        required
        value={password}
        onChange={setPassword}
        error={required.missing.password ?? fieldError(change.error, 'password')}
        hint="At least 8 characters."
      />
      <PasswordField
        label="Confirm new password"
        name="password_confirmation"
        autoComplete="new-password"
        required
        value={confirmation}
        onChange={setConfirmation}
        error={
          required.missing.password_confirmation ??
          (mismatch ? 'The two new passwords differ.' : fieldError(change.error, 'password_confirmation'))
        }
      />
      <FormError message={error} />
      <div className="actions">
        <SubmitButton pending={change.isPending} pendingLabel="Saving…">
          Change password
        </SubmitButton>
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
  const { missing, check } = useRequiredFields();
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
        <RequestError error={start.error} />
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
        const filled = check(event.currentTarget, {
          code: ['authentication code', code.replace(/\s+/g, '')],
          password: ['password', password],
        });
        if (filled) enable.mutate();
        else enable.reset();
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
          <TextField
            label="Authentication code"
            error={missing.code ?? fieldError(enable.error, 'code')}
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            required
            value={code}
            onChange={setCode}
          />
          <PasswordField
            label="Password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={setPassword}
            error={missing.password ?? fieldError(enable.error, 'password')}
          />
        </li>
      </ol>
      <FormError message={error} />
      <div className="actions">
        <button type="button" onClick={() => setSetup(null)}>
          Cancel
        </button>
        <SubmitButton pending={enable.isPending} pendingLabel="Turning on…">
          Turn on two-factor authentication
        </SubmitButton>
      </div>
    </form>
  );
}

function DisableTwoFactor() {
  const client = useQueryClient();
  const notify = useNotify();
  const [password, setPassword] = useState('');
  const { missing, check } = useRequiredFields();
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
        if (check(event.currentTarget, { password: ['password', password] })) disable.mutate();
        else disable.reset();
      }}
      noValidate
    >
      <p>Two-factor authentication is on: logging in asks for a code from your authenticator app.</p>
      <PasswordField
        label="Password"
        name="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={setPassword}
        error={missing.password ?? fieldError(disable.error, 'password')}
        hint="To turn it off, confirm your password."
      />
      <FormError message={error} />
      <div className="actions">
        <SubmitButton pending={disable.isPending} pendingLabel="Turning off…" className="danger">
          Turn off two-factor authentication
        </SubmitButton>
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

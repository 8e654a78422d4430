import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, ApiError, errorMessage } from '../api/client.ts';
import type { LoginResponse } from '../api/types.ts';
import { FormError, PasswordField, SubmitButton, TextField, useRequiredFields } from '../components/Form.tsx';
import { navigate, useLocation } from '../router.tsx';

/** Where to go after logging in: a path of this panel only, never another site. */
function safeNext(value: string | null): string {
  return value !== null && value.startsWith('/') && !value.startsWith('//') && !value.startsWith('/login')
    ? value
    : '/servers';
}

function loginError(error: unknown): string {
  // The API says the same for an unknown account and a wrong password; so does the panel.
  if (error instanceof ApiError && (error.status === 400 || error.status === 422))
    return 'Those credentials do not match an account. Check them and try again.';
  return errorMessage(error);
}

export function LoginPage() {
  const location = useLocation();
  const client = useQueryClient();
  const next = safeNext(location.search.get('next'));
  const expired = location.search.get('expired') === '1';
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const [checkpoint, setCheckpoint] = useState<string | null>(null);
  const [useRecovery, setUseRecovery] = useState(false);
  const [code, setCode] = useState('');
  const { missing, check, clear } = useRequiredFields();
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    document.title = 'Log in · Aerie';
  }, []);
  useEffect(() => {
    if (checkpoint !== null) heading.current?.focus();
  }, [checkpoint]);

  const finish = () => {
    client.clear();
    navigate(next, { replace: true });
  };

  const submitLogin = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setError(null);
    const filled = check(event.currentTarget, {
      user: ['username or email', user.trim()],
      password: ['password', password],
    });
    if (!filled) return;
    setPending(true);
    setError(null);
    try {
      const response = await api<LoginResponse>('/auth/login', {
        method: 'POST',
        body: { user, password },
        expect401: true,
      });
      if (response.data.complete) finish();
      else {
        setCheckpoint(response.data.confirmation_token);
        setPassword('');
      }
    } catch (failure) {
      setError(loginError(failure));
    } finally {
      setPending(false);
    }
  };

  const submitCode = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (checkpoint === null) return;
    setError(null);
    const filled = check(
      event.currentTarget,
      useRecovery
        ? { recovery_token: ['recovery token', code.trim()] }
        : { authentication_code: ['authentication code', code.replace(/\s+/g, '')] },
    );
    if (!filled) return;
    setPending(true);
    setError(null);
    try {
      const body = useRecovery
        ? { confirmation_token: checkpoint, recovery_token: code.trim() }
        : { confirmation_token: checkpoint, authentication_code: code.replace(/\s+/g, '') };
      await api('/auth/login/checkpoint', { method: 'POST', body, expect401: true });
      finish();
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 400 && /expired/i.test(failure.message)) {
        // The confirmation token lasts a few minutes: start the login again.
        setCheckpoint(null);
        setCode('');
        setError('That took too long. Log in again.');
      } else if (
        failure instanceof ApiError &&
        failure.status === 400 &&
        /already used/i.test(failure.message)
      ) {
        // The right code, but a login took it already: only the next one will do.
        setCode('');
        setError('That code was already used. Wait for the next one from your authenticator app.');
      } else if (failure instanceof ApiError && (failure.status === 400 || failure.status === 422))
        setError(
          useRecovery
            ? 'That recovery token is not valid.'
            : 'That code is not valid. Enter the current one.',
        );
      else setError(errorMessage(failure));
    } finally {
      setPending(false);
    }
  };

  return (
    <main id="main" className="login">
      <div className="login-card">
        <p className="brand">
          <img src="/favicon.svg" alt="" width={28} height={28} /> Aerie
        </p>
        <h1 ref={heading} tabIndex={-1}>
          {checkpoint === null ? 'Log in' : 'Two-factor authentication'}
        </h1>
        {expired && checkpoint === null ? (
          <p className="notice notice-info">Your session has ended. Log in again to continue.</p>
        ) : null}
        <FormError message={error} />
        {checkpoint === null ? (
          <form onSubmit={(event) => void submitLogin(event)} noValidate>
            <TextField
              label="Username or email"
              name="user"
              autoComplete="username"
              required
              value={user}
              onChange={setUser}
              error={missing.user}
              autoFocus
            />
            <PasswordField
              label="Password"
              name="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={setPassword}
              error={missing.password}
            />
            <SubmitButton pending={pending} pendingLabel="Logging in…" className="primary wide">
              Log in
            </SubmitButton>
          </form>
        ) : (
          <form onSubmit={(event) => void submitCode(event)} noValidate>
            <p>
              {useRecovery
                ? 'Enter one of the recovery tokens you saved when you turned on two-factor authentication. Each works once.'
                : 'Enter the 6-digit code from your authenticator app.'}
            </p>
            {useRecovery ? (
              <TextField
                label="Recovery token"
                key="recovery"
                name="recovery_token"
                autoComplete="off"
                required
                value={code}
                onChange={setCode}
                error={missing.recovery_token}
                autoFocus
              />
            ) : (
              <TextField
                label="Authentication code"
                key="code"
                name="authentication_code"
                inputMode="numeric"
                autoComplete="one-time-code"
                pattern="[0-9 ]*"
                maxLength={8}
                required
                value={code}
                onChange={setCode}
                error={missing.authentication_code}
                autoFocus
              />
            )}
            <SubmitButton pending={pending} pendingLabel="Checking…" className="primary wide">
              Continue
            </SubmitButton>
            <button
              type="button"
              className="link-button"
              onClick={() => {
                setUseRecovery((value) => !value);
                setCode('');
                setError(null);
                clear();
              }}
            >
              {useRecovery ? 'Use an authentication code instead' : 'Use a recovery token instead'}
            </button>
          </form>
        )}
      </div>
    </main>
  );
}

import type { ReactNode } from 'react';
import { errorMessage } from '../api/client.ts';
import { Field } from './Field.tsx';

/** A failure of the form (or the page) as a whole, announced at once; nothing when there is none. */
export function FormError({ message }: { message: string | null }) {
  return message === null ? null : (
    <p className="error" role="alert">
      {message}
    </p>
  );
}

/** The sentence for a failed request, or nothing while it has not failed. */
export function RequestError({ error }: { error: unknown }) {
  return <FormError message={error === null ? null : errorMessage(error)} />;
}

interface SubmitButtonProps {
  /** While true the button is disabled and says `pendingLabel` instead of its label. */
  pending: boolean;
  pendingLabel: string;
  className?: string;
  children: ReactNode;
}

export function SubmitButton({ pending, pendingLabel, className = 'primary', children }: SubmitButtonProps) {
  return (
    <button type="submit" className={className} disabled={pending}>
      {pending ? pendingLabel : children}
    </button>
  );
}

interface PasswordFieldProps {
  label: string;
  name: string;
  autoComplete: 'current-password' | 'new-password';
  value: string;
  onChange: (value: string) => void;
  error?: string | undefined;
  hint?: ReactNode;
  required?: boolean;
}

/** A labelled password input with its hint and error (see Field). */
export function PasswordField({
  label,
  name,
  autoComplete,
  value,
  onChange,
  error,
  hint,
  required,
}: PasswordFieldProps) {
  return (
    <Field label={label} error={error} hint={hint}>
      {(control) => (
        <input
          {...control}
          name={name}
          type="password"
          autoComplete={autoComplete}
          required={required}
          value={value}
          onChange={(event) => onChange(event.target.value)}
        />
      )}
    </Field>
  );
}

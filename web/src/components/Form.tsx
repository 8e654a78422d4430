import type { InputHTMLAttributes, ReactNode } from 'react';
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

type InputProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange'>;

interface TextFieldProps extends InputProps {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  error?: string | undefined;
  hint?: ReactNode;
}

/** A labelled input with its hint and error (see Field); the other props are the input's. */
export function TextField({ label, error, hint, onChange, ...input }: TextFieldProps) {
  return (
    <Field label={label} error={error} hint={hint}>
      {(control) => <input {...control} {...input} onChange={(event) => onChange(event.target.value)} />}
    </Field>
  );
}

/** A TextField for a password. */
export function PasswordField(props: Omit<TextFieldProps, 'type'>) {
  return <TextField {...props} type="password" />;
}

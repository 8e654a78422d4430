import { useCallback, useState, type InputHTMLAttributes, type ReactNode } from 'react';
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

/** What a form's required fields lack, by the name of their input: the sentence for each. */
export type Missing = Partial<Record<string, string>>;

/** A required field left empty, in the API's words for it: "The password field is required." */
export function requiredMessage(name: string): string {
  return `The ${name} field is required.`;
}

/**
 * A form's required fields, checked before anything is sent. `check(form, fields)` takes each
 * field by its input's name: `[its name in a sentence, its value as it would be sent]`. It marks
 * every empty one (`missing[input]` is the message to give that field as its `error`), moves the
 * focus to the first, and says whether the form may be sent.
 */
export function useRequiredFields() {
  const [missing, setMissing] = useState<Missing>({});
  const check = useCallback(
    (form: HTMLFormElement, fields: Record<string, readonly [name: string, value: string]>): boolean => {
      const lacking: Missing = {};
      for (const [input, [name, value]] of Object.entries(fields))
        if (value === '') lacking[input] = requiredMessage(name);
      setMissing(lacking);
      const first = Object.keys(lacking)[0];
      if (first === undefined) return true;
      const control = form.elements.namedItem(first);
      if (control instanceof HTMLElement) control.focus();
      return false;
    },
    [],
  );
  const clear = useCallback(() => setMissing({}), []);
  return { missing, check, clear };
}

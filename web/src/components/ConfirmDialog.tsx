import { useState, type ReactNode } from 'react';
import { errorMessage } from '../api/client.ts';
import { Dialog } from './Dialog.tsx';
import { FormError, SubmitButton } from './Form.tsx';

interface ConfirmDialogProps {
  title: string;
  message: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  /** Runs when confirmed; the dialog closes when it resolves and shows the error if it fails. */
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
  children?: ReactNode;
}

export function ConfirmDialog({
  title,
  message,
  confirmLabel,
  danger = false,
  onConfirm,
  onClose,
  children,
}: ConfirmDialogProps) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const confirm = async () => {
    setPending(true);
    setError(null);
    try {
      await onConfirm();
      onClose();
    } catch (failure) {
      setError(errorMessage(failure));
      setPending(false);
    }
  };
  return (
    <Dialog title={title} onClose={onClose} description={message}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void confirm();
        }}
      >
        {children}
        <FormError message={error} />
        <div className="actions">
          <button type="button" onClick={onClose} data-autofocus>
            Cancel
          </button>
          <SubmitButton pending={pending} pendingLabel="Working…" className={danger ? 'danger' : 'primary'}>
            {confirmLabel}
          </SubmitButton>
        </div>
      </form>
    </Dialog>
  );
}

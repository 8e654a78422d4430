import type { ServerStatus } from '../api/types.ts';

const LABELS: Record<string, string> = {
  restoring_backup: 'Restoring backup',
  installing: 'Installing',
  install_failed: 'Install failed',
  suspended: 'Suspended',
  transferring: 'Transferring',
};

export function statusLabel(status: ServerStatus): string {
  if (status === null) return 'Ready';
  return LABELS[status] ?? status.replace(/_/g, ' ');
}

export function StatusBadge({ status }: { status: ServerStatus }) {
  return (
    <span className={`badge status-${status ?? 'ready'}`} data-status={status ?? 'ready'}>
      {statusLabel(status)}
    </span>
  );
}

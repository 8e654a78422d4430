import type { BackupSummary } from '../api/types.ts';
import { Time } from './Time.tsx';

type Warning = BackupSummary['warnings'][number];

/** What each warning says, in words: the colour only repeats it. */
function warningText(warning: Warning): string {
  return warning === 'last_backup_failed' ? 'Last backup failed' : 'No successful backup in 7 days';
}

/** When the server was last backed up successfully ("2 hours ago", "never"). */
export function LastSuccessfulBackup({ summary }: { summary: BackupSummary }) {
  return summary.last_successful_at === null ? <span>never</span> : <Time iso={summary.last_successful_at} />;
}

/** The server's backup warnings, each a sentence; nothing when all is well. */
export function BackupWarnings({ summary }: { summary: BackupSummary }) {
  if (summary.warnings.length === 0) return null;
  return (
    <ul className="backup-warnings">
      {summary.warnings.map((warning) => (
        <li key={warning} className="backup-warning" data-warning={warning}>
          <span aria-hidden="true">⚠ </span>
          {warningText(warning)}
          {warning === 'last_backup_failed' && summary.last_failed_at !== null ? (
            <>
              {' '}
              <Time iso={summary.last_failed_at} />
            </>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

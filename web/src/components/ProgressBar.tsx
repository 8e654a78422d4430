import type { Progress } from '../api/types.ts';
import { formatBytes, formatDuration, plural, progressFigures } from '../format.ts';

const PHASES: Record<string, string> = {
  archiving: 'Archiving',
  uploading: 'Uploading',
  extracting: 'Extracting',
  merging: 'Keeping the other files',
  swapping: 'Putting files in place',
};

function phaseLabel(progress: Progress): string {
  const known = PHASES[progress.phase];
  if (known !== undefined) return known;
  const text = progress.phase.replace(/[_-]+/g, ' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * How far a backup or restore is: a bar, its percent, and the time left at the rate so far (once
 * there is one).
 */
interface ProgressBarProps {
  progress: Progress;
  label: string;
  /** A backup's likely size (the one before it), for a percent before its own size is known. */
  guessBytes?: number | null;
}

export function ProgressBar({ progress, label, guessBytes = null }: ProgressBarProps) {
  const { percent, secondsLeft, estimated } = progressFigures(progress, guessBytes);
  const amount =
    progress.bytes_total !== null
      ? `${formatBytes(progress.bytes_done)} of ${formatBytes(progress.bytes_total)}`
      : progress.files_total !== null
        ? `${progress.files_done} of ${plural(progress.files_total, 'file')}`
        : `${formatBytes(progress.bytes_done)}, ${plural(progress.files_done, 'file')}`;
  const left =
    secondsLeft === null ? null : secondsLeft === 0 ? 'almost done' : `${formatDuration(secondsLeft)} left`;
  return (
    <div className="progress" data-operation={progress.operation}>
      <div className="progress-text">
        <span>{phaseLabel(progress)}</span>
        <span
          className="progress-percent"
          title={estimated ? 'Estimated from the size of the last backup' : undefined}
        >
          {percent === null ? '' : `${estimated ? '~' : ''}${percent}%`}
        </span>
      </div>
      <progress
        max={100}
        value={percent ?? undefined}
        aria-label={label}
        aria-valuetext={
          percent === null ? `${phaseLabel(progress)}, ${amount}` : `${estimated ? 'about ' : ''}${percent}%`
        }
      />
      <div className="progress-text muted">
        <span>{amount}</span>
        {left === null ? null : <span className="progress-eta">{left}</span>}
      </div>
    </div>
  );
}

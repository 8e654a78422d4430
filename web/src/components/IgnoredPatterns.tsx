import { plural } from '../format.ts';

/** A backup's ignore patterns (as in a .gitignore), one a line, as written. */
export function PatternList({ patterns }: { patterns: string[] }) {
  return (
    <ul className="patterns">
      {patterns.map((pattern, index) => (
        <li key={`${index}:${pattern}`}>
          <code>{pattern}</code>
        </li>
      ))}
    </ul>
  );
}

/** "Ignored: 2 patterns", opening to the list; nothing for a backup made without any. */
export function IgnoredPatterns({ patterns }: { patterns: string[] }) {
  if (patterns.length === 0) return null;
  return (
    <details className="backup-ignored">
      <summary>Ignored: {plural(patterns.length, 'pattern')}</summary>
      <PatternList patterns={patterns} />
    </details>
  );
}

/**
 * The warning a restore that deletes first gives for a backup made with ignore patterns: files
 * matching them (`where` says which: all, or those under the chosen folders) are deleted and not
 * brought back, since the backup left them out.
 */
export function IgnoredLossWarning({ patterns, where }: { patterns: string[]; where: string }) {
  return (
    <div className="warning" role="alert" data-testid="truncate-ignored-warning">
      <p>
        <strong>
          Files {where}matching {patterns.length === 1 ? 'this pattern' : 'these patterns'} will be deleted
          and not brought back
        </strong>
        : the backup left them out, so they are not in it.
      </p>
      <PatternList patterns={patterns} />
    </div>
  );
}

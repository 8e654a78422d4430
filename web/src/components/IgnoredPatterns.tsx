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

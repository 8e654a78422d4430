import ignore from 'ignore';
import { isText } from '../shared/text-rules.ts';

/** The most an `ignored` text may hold: beyond this a request is refused (422), not truncated. */
export const IGNORED_LIMITS = { characters: 8192, patterns: 500, patternCharacters: 1024 } as const;

/**
 * The `ignored` text of a backup request: one pattern a line, read as a `.gitignore` is (which
 * is what the reference panel's daemon does). `*.tmp` matches at any depth, `/cache` only at the
 * top, `logs/` only directories, `**` crosses directories and `!keep.tmp` takes a path back in.
 * Blank lines and `#` comments are dropped; spaces around a pattern are not part of it.
 */
export function parseIgnored(text: string): string[] {
  return text
    .split(/\r?\n|\r/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** Why an `ignored` text is refused, or null when it is fine. */
export function ignoredProblem(text: string): string | null {
  if (text.length > IGNORED_LIMITS.characters) {
    return `at most ${IGNORED_LIMITS.characters} characters`;
  }
  const patterns = parseIgnored(text);
  if (patterns.length > IGNORED_LIMITS.patterns) return `at most ${IGNORED_LIMITS.patterns} patterns`;
  if (patterns.some((pattern) => pattern.length > IGNORED_LIMITS.patternCharacters)) {
    return `patterns of at most ${IGNORED_LIMITS.patternCharacters} characters`;
  }
  // Multi-line text (shared/text.ts): tabs are fine inside a pattern, but other control
  // characters name no file anyone meant to leave out, and the whole text is checked, comments
  // too, as every stored text is.
  if (!isText(text, 'multi-line')) return 'patterns without control characters';
  return null;
}

/**
 * Whether a path of the volume (relative, `/`-separated, no leading slash) is left out. The
 * matcher compiles each pattern into an expression without nested repetition, so a test costs
 * time in proportion to the path and the patterns, whatever they are. Case matters, as it does
 * in file names on the volume.
 */
export function ignoreMatcher(patterns: readonly string[]): (path: string, isDirectory: boolean) => boolean {
  if (patterns.length === 0) return () => false;
  const rules = ignore({ ignorecase: false }).add([...patterns]);
  return (path, isDirectory) => rules.ignores(isDirectory ? `${path}/` : path);
}

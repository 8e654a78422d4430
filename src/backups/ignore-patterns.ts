/**
 * The `ignored` text of a backup request: one pattern a line, as the reference panel takes it.
 * A pattern names a path relative to the volume (a leading `/` is allowed); `*` matches within
 * one path segment and `**` across segments; a pattern that names a directory excludes all of
 * it. Blank lines and lines starting with `#` are ignored. Negations (`!`) are not supported and
 * are ignored rather than misread.
 */
export function parseIgnored(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('!'))
    .slice(0, 1000);
}

function toRegExp(pattern: string): RegExp {
  const body = pattern
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((text) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${body}(/.*)?$`);
}

export function ignoreMatcher(patterns: readonly string[]): (relativePath: string) => boolean {
  const expressions = patterns.map(toRegExp);
  return (relativePath) => expressions.some((expression) => expression.test(relativePath));
}

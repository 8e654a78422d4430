/** Paths inside a backup, as a request names them (browsing, one file's download, a partial restore). */
import { ValidationError } from '../shared/errors.ts';

/** The longest path accepted, in bytes (Linux's PATH_MAX). */
const MAX_PATH_BYTES = 4096;
/** The longest name of one path component, in bytes. */
const MAX_NAME_BYTES = 255;

/**
 * A path in a backup as the catalog keeps it (`/`, `/world/region`): `/`-separated from the
 * backup's root, empty and `.` components dropped. `..`, NUL, and overlong paths or names are a
 * 422 naming `field`, whatever they would resolve to.
 */
export function backupPath(input: string, field: string): string {
  const refuse = (message: string) => new ValidationError([{ field, rule: 'path', message }]);
  if (input.includes('\0')) throw refuse(`The ${field} must not contain NUL characters.`);
  if (Buffer.byteLength(input) > MAX_PATH_BYTES)
    throw refuse(`The ${field} must not be longer than ${MAX_PATH_BYTES} bytes.`);
  const parts = input.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw refuse(`The ${field} must stay inside the backup: ".." is not allowed.`);
  if (parts.some((part) => Buffer.byteLength(part) > MAX_NAME_BYTES))
    throw refuse(`Each name in the ${field} must be at most ${MAX_NAME_BYTES} bytes.`);
  return `/${parts.join('/')}`;
}

/** The components of a normalized backup path (none for `/`). */
export function pathParts(normalized: string): string[] {
  return normalized.split('/').filter((part) => part !== '');
}

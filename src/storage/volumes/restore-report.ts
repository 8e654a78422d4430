/**
 * The report of a restore's extraction, saved in a small JSON file beside its staging tree before
 * the swap, so that a restore finished by crash recovery records what a normal one does. The file
 * names the staging directory it describes (device and inode): once the swap has happened, the
 * volume is that very directory, and only then is the report read back.
 */
import { lstat, open, readFile } from 'node:fs/promises';
import type { ExtractReport } from '../archive/archive.types.ts';

/** How many skipped entries the saved report lists (the completion entry shows fewer). */
const SAVED_SKIPPED = 100;

interface SavedReport {
  /** `dev:ino` of the staging directory. */
  staged: string;
  report: ExtractReport;
}

/** Writes `report` about `stagingDir` to `file`, synced (the caller syncs the directory). */
export async function saveReport(file: string, stagingDir: string, report: ExtractReport): Promise<void> {
  const listed = report.skipped.slice(0, SAVED_SKIPPED);
  const omitted = (report.skippedOmitted ?? 0) + report.skipped.length - listed.length;
  const saved: SavedReport = {
    staged: (await identity(stagingDir)) ?? '',
    report: { ...report, skipped: listed, ...(omitted > 0 ? { skippedOmitted: omitted } : {}) },
  };
  const handle = await open(file, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(saved));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The report in `file`, if `volumeDir` is the directory it describes (its staging tree has been
 * swapped in); null when there is none, it is unreadable, or it describes another directory.
 */
export async function readReport(file: string, volumeDir: string): Promise<ExtractReport | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let saved: Partial<SavedReport> | null;
  try {
    saved = JSON.parse(text) as Partial<SavedReport> | null;
  } catch {
    return null; // cut short by a crash while it was written: no swap can have followed
  }
  const report = saved?.report;
  const valid =
    typeof saved?.staged === 'string' &&
    typeof report?.files === 'number' &&
    Array.isArray(report.skipped) &&
    report.skipped.every((entry) => typeof entry.path === 'string' && typeof entry.kind === 'string');
  if (!valid || saved?.staged !== (await identity(volumeDir))) return null;
  return report;
}

/** `dev:ino` of a directory, or null if it does not exist. */
async function identity(dir: string): Promise<string | null> {
  try {
    const stats = await lstat(dir, { bigint: true });
    return `${stats.dev}:${stats.ino}`;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

import type { Progress } from './archive.types.ts';
import { readArchive } from './archive-reader.ts';

/**
 * Reads a backup archive to its end without writing anything, to prove that a restore would
 * accept it: it goes through the same reader and checks as extraction (archive-reader.ts), so it
 * refuses exactly what a restore refuses, with the same ArchiveError. Counts the files a restore
 * would write and their bytes.
 */
export async function verifyArchive(file: string, onProgress?: (p: Progress) => void): Promise<Progress> {
  const seen: Progress = { files: 0, bytes: 0 };
  await readArchive(file, ({ rel, kind, tar }) => {
    if (kind !== 'file' || rel === '') return;
    seen.files += 1;
    seen.bytes += tar.size;
    onProgress?.(seen);
  });
  return seen;
}

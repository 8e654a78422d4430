/**
 * Builds a backup's catalog (storage/catalog/backup-catalog.ts) in a worker thread: a snapshot's
 * index is loaded and its trees read there, an archive gunzipped and its headers parsed there,
 * never in the thread answering HTTP.
 */
import { runInThread } from '../shared/thread.ts';
import { reviveArchiveError } from '../storage/archive/archive.types.ts';
import type { CatalogSummary } from '../storage/catalog/backup-catalog.ts';
import type { RepositoryLocation } from '../storage/repository/repository-location.ts';
import type { ArchiveLocation } from '../storage/stores/backup-storage.ts';

/** Where the backup is: a snapshot in its repository, or an archive (a file, or an S3 object). */
export type CatalogSource = { repository: RepositoryLocation } | { archive: ArchiveLocation };

export interface CatalogWorkInput {
  source: CatalogSource;
  backup: { id: string; sha256: string | null };
  /** The catalog's directory (made whole, or not at all). */
  target: string;
}

export function catalogInThread(input: CatalogWorkInput, signal?: AbortSignal): Promise<CatalogSummary> {
  return runInThread<CatalogSummary>(import.meta.url, './backup-catalog-work.thread', input, {
    reviveError: reviveArchiveError,
    ...(signal === undefined ? {} : { signal }),
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
}

/**
 * Where a server's snapshot repository is, as plain values: a worker thread (which takes a
 * snapshot, restores or prunes) opens its own store from one. Each server has a repository of
 * its own: `<backups dir>/<server uuid>/repository/` on local disk, `<server uuid>/repository/`
 * in an S3 bucket (docs/snapshots.md says why one per server).
 */
import path from 'node:path';
import type { S3Settings } from '../../config.ts';
import { LocalRepositoryStore, type RepositoryStore } from './repository-store.ts';

export type RepositoryLocation =
  { kind: 'local'; root: string } | { kind: 's3'; s3: S3Settings; prefix: string };

/** The name a repository's locks are kept under: its disk and server. */
export function repositoryName(disk: string, serverId: string): string {
  return `${disk}:${serverId}`;
}

export function localRepository(backupsDir: string, serverId: string): RepositoryLocation {
  return { kind: 'local', root: path.join(backupsDir, serverId, 'repository') };
}

export function s3Repository(s3: S3Settings, serverId: string): RepositoryLocation {
  return { kind: 's3', s3, prefix: `${serverId}/repository/` };
}

/** Opens the store of a repository. The S3 client is loaded only for an S3 one. */
export async function openRepositoryStore(location: RepositoryLocation): Promise<RepositoryStore> {
  if (location.kind === 'local') return new LocalRepositoryStore(location.root);
  const { S3RepositoryStore } = await import('./s3-repository-store.ts');
  return new S3RepositoryStore(location.s3, location.prefix);
}

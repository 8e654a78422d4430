/**
 * The two ways a backup is stored (AERIE_BACKUP_FORMAT), for tests that run once for each: a
 * whole `.tar.gz` archive (`<backups dir>/<server uuid>/<backup uuid>.tar.gz` locally), or a
 * snapshot in the server's repository (its record `…/<server uuid>/repository/snapshots/<backup
 * uuid>`). What a backup holds is read the same way for both: from the .tar.gz its signed
 * download link serves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Parser } from 'tar';
import { expect } from 'vitest';
import { LocalRepositoryStore } from '../../src/storage/repository/repository-store.ts';
import { Repository } from '../../src/storage/repository/repository.ts';
import { snapshotTarGz } from '../../src/storage/repository/snapshot-tar.ts';
import { archiveEntries } from './archives.ts';
import type { TestApp } from './harness.ts';

export const BACKUP_FORMATS = ['archive', 'snapshot'] as const;
export type BackupFormat = (typeof BACKUP_FORMATS)[number];

/** The environment that makes new backups of this format (to give `startTestApp` or `aerie`). */
export function formatEnv(format: BackupFormat): Record<string, string> {
  return { AERIE_BACKUP_FORMAT: format };
}

/** Where the local store keeps a backup of this format: its archive, or its snapshot record. */
export function storedPath(app: TestApp, serverId: string, backupId: string, format: BackupFormat): string {
  return format === 'archive'
    ? path.join(app.config.backupsDir, serverId, `${backupId}.tar.gz`)
    : path.join(app.config.backupsDir, serverId, 'repository', 'snapshots', backupId);
}

/** Whether the local store holds the backup: its archive, or its snapshot record. */
export function isStored(app: TestApp, serverId: string, backupId: string, format: BackupFormat): boolean {
  return fs.existsSync(storedPath(app, serverId, backupId, format));
}

/** The key of a backup of this format in an S3 bucket: its archive, or its snapshot record. */
export function storedKey(serverId: string, backupId: string, format: BackupFormat): string {
  return format === 'archive'
    ? `${serverId}/${backupId}.tar.gz`
    : `${serverId}/repository/snapshots/${backupId}`;
}

/**
 * The .tar.gz a backup downloads as: its download link asked for with `token`, then followed
 * without it (the link of a backup in the local store is a signed path on Aerie).
 */
export async function downloadedTarGz(
  app: TestApp,
  token: string,
  server: { identifier: string },
  uuid: string,
): Promise<Buffer> {
  const link = await app.http.inject({
    method: 'GET',
    url: `/api/client/servers/${server.identifier}/backups/${uuid}/download`,
    headers: { authorization: `Bearer ${token}` },
  });
  expect(link.statusCode, link.body).toBe(200);
  const url = new URL(link.json<{ attributes: { url: string } }>().attributes.url);
  const download = await app.http.inject({ method: 'GET', url: url.pathname + url.search });
  expect(download.statusCode, download.body).toBe(200);
  return download.rawPayload;
}

/** The entries of a .tar.gz held in memory, as `archiveEntries` lists a file's (`File:a/b`, …). */
export async function tarGzEntries(tarGz: Buffer): Promise<string[]> {
  const entries: string[] = [];
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry) => {
      entries.push(`${entry.type}:${entry.path}`);
      entry.resume();
    },
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('error', reject);
    parser.on('end', resolve);
    parser.end(tarGz);
  });
  return entries;
}

/**
 * The entries of what a backup holds (`File:a/b`, …): those of its stored archive, read from the
 * local store; those of the .tar.gz a snapshot downloads as.
 */
export async function backupEntries(
  app: TestApp,
  token: string,
  server: { id: string; identifier: string },
  uuid: string,
  format: BackupFormat,
): Promise<string[]> {
  if (format === 'archive') return archiveEntries(storedPath(app, server.id, uuid, 'archive'));
  return tarGzEntries(await downloadedTarGz(app, token, server, uuid));
}

/**
 * Writes to `file` the .tar.gz a snapshot backup in a local repository downloads as (made from
 * the repository under `<backups dir>/<server uuid>/repository/`, as a download makes it), for a
 * process that has no app to ask for a download link.
 */
export async function snapshotTarGzFile(
  backupsDir: string,
  serverId: string,
  backupId: string,
  file: string,
): Promise<string> {
  const store = new LocalRepositoryStore(path.join(backupsDir, serverId, 'repository'));
  try {
    const repository = await Repository.open(store);
    const { record } = await repository.loadSnapshot(backupId);
    await pipeline(snapshotTarGz(repository, record.tree), fs.createWriteStream(file));
    return file;
  } finally {
    await store.close();
  }
}

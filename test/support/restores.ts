/**
 * A restore as the API and the database see it: the request that asks for one, the server's
 * status, the queued jobs, the activity entries written, and what a restore leaves in the
 * volumes directory.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BackupRepository } from '../../src/backups/backup.repository.ts';
import type { Backup } from '../../src/backups/backup.ts';
import type { ServerStatus } from '../../src/servers/server.table.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import type { TestApp } from './harness.ts';

/** Where the local store keeps a backup's archive. */
export function storedArchive(app: TestApp, serverId: string, backupId: string): string {
  return path.join(app.config.backupsDir, serverId, `${backupId}.tar.gz`);
}

/**
 * A .tar.gz written as is into the local store, recorded as a successful archive backup of the
 * server (a foreign or hand-made archive; its checksum the archive's own unless given).
 */
export async function plantArchive(
  app: TestApp,
  serverId: string,
  bytes: Buffer,
  options: { sha256?: string; files?: number; name?: string } = {},
): Promise<Backup> {
  const id = randomUUID();
  const file = storedArchive(app, serverId, id);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, bytes);
  const now = toStoredTime(new Date());
  const backup: Backup = {
    id,
    serverId,
    name: options.name ?? 'planted',
    ignoredFiles: [],
    disk: 'local',
    sha256: options.sha256 ?? createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
    isSuccessful: true,
    isLocked: false,
    isAutomatic: false,
    scheduleId: null,
    createdAt: now,
    completedAt: now,
    files: options.files ?? 1,
    format: 'archive',
    addedBytes: null,
    progress: null,
  };
  await new BackupRepository(app.db.kysely).insert(backup);
  return backup;
}

/** POST …/restore. `body` undefined sends no body and no Content-Type; a string is sent as is. */
export function postRestore(
  app: TestApp,
  token: string | null,
  server: string,
  backup: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return app.http.inject({
    method: 'POST',
    url: `/api/client/servers/${server}/backups/${backup}/restore`,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(payload === undefined ? {} : { payload }),
  });
}

export async function serverStatus(app: TestApp, serverId: string): Promise<string | null> {
  const row = await app.db.kysely
    .selectFrom('servers')
    .select('status')
    .where('id', '=', serverId)
    .executeTakeFirstOrThrow();
  return row.status;
}

export async function setServerStatus(
  app: TestApp,
  serverId: string,
  status: ServerStatus | null,
): Promise<void> {
  await app.db.kysely.updateTable('servers').set({ status }).where('id', '=', serverId).execute();
}

/** The restore jobs queued for a server, oldest first, with their payloads parsed. */
export async function restoreJobsOf(app: TestApp, serverId: string) {
  const rows = await app.db.kysely
    .selectFrom('jobs')
    .selectAll()
    .where('kind', '=', 'backup.restore')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      ...row,
      id: Number(row.id),
      payload: JSON.parse(row.payload) as Record<string, unknown>,
    }))
    .filter((row) => row.payload.serverId === serverId);
}

export interface LoggedEntry {
  id: number;
  batch: string;
  event: string;
  actor_id: string | null;
  ip: string | null;
  properties: Record<string, unknown>;
  subjects: string[];
}

/** Activity entries about a server (its subjects include it), oldest first, with their subjects. */
export async function activityOfServer(
  app: TestApp,
  serverId: string,
  eventPrefix = 'server:backup.restore',
): Promise<LoggedEntry[]> {
  const db = app.db.kysely;
  const rows = await db
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select(['l.id', 'l.batch', 'l.event', 'l.actor_id', 'l.ip', 'l.properties'])
    .where('s.subject_type', '=', 'server')
    .where('s.subject_id', '=', serverId)
    .where('l.event', 'like', `${eventPrefix}%`)
    .orderBy('l.id')
    .execute();
  const entries: LoggedEntry[] = [];
  for (const row of rows) {
    const subjects = await db
      .selectFrom('activity_log_subjects')
      .select(['subject_type', 'subject_id'])
      .where('activity_log_id', '=', row.id)
      .execute();
    entries.push({
      ...row,
      id: Number(row.id),
      properties: JSON.parse(row.properties) as Record<string, unknown>,
      subjects: subjects.map((s) => `${s.subject_type}:${s.subject_id}`).sort(),
    });
  }
  return entries;
}

/** Names in the volumes directory left by a restore (staging or retired trees, trees in the trash). */
export async function restoreLeftovers(app: TestApp): Promise<string[]> {
  const inTrash = await readdir(path.join(app.config.volumesDir, '.trash')).catch(() => []);
  return [
    ...(await readdir(app.config.volumesDir)).filter((name) => name.startsWith('.restore-')),
    ...inTrash.map((name) => `.trash/${name}`),
  ];
}

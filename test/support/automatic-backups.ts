/**
 * Automatic backups as tests make them: a schedule's backup (`createScheduled`) run through to
 * its end by a worker, a server's backup limit set, and what the server's activity log holds.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Backup } from '../../src/backups/backup.ts';
import { createApiKey, createServer, createUser, drainJobs, type TestApp } from './harness.ts';

export const SCHEDULE = { scheduleId: 7, scheduleName: 'nightly' };

/** A server with a file in its volume and the given backup limit, its owner and a token. */
export async function serverWithLimit(app: TestApp, backupLimit: number) {
  const owner = await createUser(app);
  const server = await createServer(app, owner);
  fs.writeFileSync(path.join(server.volume, 'server.properties'), 'motd=hi');
  await app.services.servers.update(server.id, { backupLimit });
  const { token } = await createApiKey(app, owner);
  return { owner, server, token, base: `/api/client/servers/${server.identifier}/backups` };
}

/** Starts a schedule's backup of the server and, unless `run` is false, runs its job. */
export async function scheduledBackup(app: TestApp, serverId: string, run = true): Promise<Backup> {
  const server = await app.db.kysely
    .selectFrom('servers')
    .selectAll()
    .where('id', '=', serverId)
    .executeTakeFirstOrThrow();
  const backup = await app.services.backupManagement.createScheduled(server, { ...SCHEDULE, ignored: '' });
  if (run) await drainJobs(app);
  return backup;
}

/** The server's backups as rows, oldest first. */
export async function backupRows(app: TestApp, serverId: string) {
  return app.db.kysely
    .selectFrom('backups')
    .select(['id', 'name', 'is_automatic', 'is_locked', 'is_successful', 'schedule_id', 'created_at'])
    .where('server_id', '=', serverId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Every activity entry about the server, in order, with its properties and actor. */
export async function serverActivity(app: TestApp, serverId: string) {
  const rows = await app.db.kysely
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select(['l.id', 'l.event', 'l.actor_id', 'l.batch', 'l.properties'])
    .where('s.subject_type', '=', 'server')
    .where('s.subject_id', '=', serverId)
    .orderBy('l.id')
    .execute();
  return rows.map((row) => ({
    event: row.event,
    actorId: row.actor_id,
    batch: row.batch,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
  }));
}

/** Whether the local store still holds the backup's archive. */
export function archiveExists(app: TestApp, serverId: string, backupId: string): boolean {
  return fs.existsSync(path.join(app.config.backupsDir, serverId, `${backupId}.tar.gz`));
}

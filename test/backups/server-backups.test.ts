import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BACKUP_FORMATS,
  downloadedTarGz,
  formatEnv,
  isStored,
  storedPath,
  tarGzEntries,
} from '../support/backup-formats.ts';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

interface Backup {
  attributes: {
    uuid: string;
    name: string;
    is_successful: boolean;
    is_locked: boolean;
    completed_at: string | null;
    sha256_hash: string | null;
    checksum: string | null;
    bytes: number;
    ignored_files: string[];
    file_count: number | null;
    is_automatic: boolean;
    format: string;
    added_bytes: number | null;
  };
}

// Every test runs for both formats of backup (AERIE_BACKUP_FORMAT): what a backup is, how it is
// listed, locked, deleted, downloaded and guarded does not depend on how it is stored.
describe.each(BACKUP_FORMATS)('backups of a server, as %s backups', (format) => {
  let app: TestApp;
  /** How far the app's clock is ahead of the real one (download links expire on it). */
  let clockAheadMs = 0;
  beforeAll(async () => {
    app = await startTestApp({ env: formatEnv(format), clock: () => new Date(Date.now() + clockAheadMs) });
  });
  afterAll(async () => app.close());

  async function setup() {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    fs.mkdirSync(path.join(server.volume, 'world'), { recursive: true });
    fs.writeFileSync(path.join(server.volume, 'world', 'level.dat'), 'level');
    fs.mkdirSync(path.join(server.volume, 'logs'));
    fs.writeFileSync(path.join(server.volume, 'logs', 'latest.log'), 'noise');
    fs.writeFileSync(path.join(server.volume, 'server.properties'), 'motd=hi');
    const { token } = await createApiKey(app, owner);
    return { owner, server, token, base: `/api/client/servers/${server.identifier}/backups` };
  }

  const events = async (serverId: string) =>
    (
      await app.db.kysely
        .selectFrom('activity_logs as l')
        .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
        .select(['l.event', 'l.batch', 'l.properties'])
        .where('s.subject_type', '=', 'server')
        .where('s.subject_id', '=', serverId)
        .orderBy('l.id')
        .execute()
    ).map((row) => ({ ...row, properties: JSON.parse(row.properties) as Record<string, unknown> }));

  it('makes a backup in the background, leaving out ignored paths, and records start and completion', async () => {
    const { server, token, base } = await setup();
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'before update', ignored: 'logs\n*.tmp' },
    });
    expect(res.statusCode).toBe(200);
    const started = res.json<Backup>().attributes;
    expect(started).toMatchObject({
      name: 'before update',
      is_successful: false,
      completed_at: null,
      ignored_files: ['logs', '*.tmp'],
    });

    expect(await drainJobs(app)).toBe(1);
    const done = (
      await app.http.inject({ method: 'GET', url: `${base}/${started.uuid}`, headers: bearer(token) })
    ).json<Backup>().attributes;
    expect(done.is_successful).toBe(true);
    expect(done.completed_at).not.toBeNull();
    expect(done.format).toBe(format);
    const recorded = await events(server.id);
    expect(recorded.map((e) => e.event)).toEqual(['server:backup.start', 'server:backup.complete']);
    expect(recorded[0]?.batch).toBe(recorded[1]?.batch);

    // The checksum is the SHA-256 of what is stored: the archive, or the snapshot record.
    const stored = fs.readFileSync(storedPath(app, server.id, started.uuid, format));
    expect(done.sha256_hash).toBe(createHash('sha256').update(stored).digest('hex'));
    expect(done.checksum).toBe(`sha256:${done.sha256_hash}`);
    // An archive's size is the archive's; a snapshot's, its files' (world/level.dat and
    // server.properties, logs/latest.log left out).
    expect(done.bytes).toBe(format === 'archive' ? stored.length : 'level'.length + 'motd=hi'.length);
    const downloaded = await downloadedTarGz(app, token, server, started.uuid);
    if (format === 'archive') expect(downloaded.equals(stored)).toBe(true);
    const entries = await tarGzEntries(downloaded);
    expect(entries).toEqual(expect.arrayContaining(['File:world/level.dat', 'File:server.properties']));
    expect(entries.some((entry) => entry.includes(':logs'))).toBe(false);
  });

  it('tells how many files a finished backup holds: null while it is made and for older backups', async () => {
    const { server, token, base } = await setup();
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'counted', ignored: 'logs' },
    });
    const started = res.json<Backup>().attributes;
    // Pterodactyl's attributes, then Aerie's own (which its clients ignore).
    expect(Object.keys(started).sort()).toEqual([
      'added_bytes',
      'bytes',
      'checksum',
      'completed_at',
      'created_at',
      'file_count',
      'format',
      'ignored_files',
      'is_automatic',
      'is_locked',
      'is_successful',
      'name',
      'progress',
      'sha256_hash',
      'uuid',
    ]);
    expect(started.file_count).toBeNull();
    expect(started.is_automatic).toBe(false);
    expect(started.format).toBe(format);
    const read = async () =>
      (
        await app.http.inject({ method: 'GET', url: `${base}/${started.uuid}`, headers: bearer(token) })
      ).json<Backup>().attributes;
    const listed = async () =>
      (await app.http.inject({ method: 'GET', url: base, headers: bearer(token) }))
        .json<{ data: Backup[] }>()
        .data.map((b) => b.attributes.file_count);
    expect((await read()).file_count).toBeNull();
    expect(await listed()).toEqual([null]);

    expect(await drainJobs(app)).toBe(1);
    // world/level.dat and server.properties; logs/latest.log was left out.
    expect(await read()).toMatchObject({ is_successful: true, file_count: 2 });
    expect(await listed()).toEqual([2]);

    // A backup made before Aerie counted files has no count, not a zero.
    await app.db.kysely
      .updateTable('backups')
      .set({ files: null })
      .where('server_id', '=', server.id)
      .execute();
    expect(await read()).toMatchObject({ is_successful: true, file_count: null });
  });

  it('lists backups newest first with pagination and backup_count, and holds the per-server limit', async () => {
    const { server, token, base } = await setup();
    await app.db.kysely.updateTable('servers').set({ backup_limit: 3 }).where('id', '=', server.id).execute();
    for (let i = 0; i < 3; i++) {
      expect(
        (
          await app.http.inject({
            method: 'POST',
            url: base,
            headers: bearer(token),
            payload: { name: `b${i}` },
          })
        ).statusCode,
      ).toBe(200);
    }
    const over = await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} });
    expect(over.statusCode).toBe(400);
    expect(over.json<{ errors: { detail: string }[] }>().errors[0]?.detail).toMatch(/limit of 3 backups/);

    const list = await app.http.inject({ method: 'GET', url: `${base}?per_page=2`, headers: bearer(token) });
    const body = list.json<{
      data: Backup[];
      meta: { backup_count: number; pagination: { total: number; total_pages: number } };
    }>();
    expect(body.meta.backup_count).toBe(3);
    expect(body.meta.pagination).toMatchObject({ total: 3, total_pages: 2 });
    expect(body.data.map((b) => b.attributes.name)).toEqual(['b2', 'b1']);
    const defaults = await app.http.inject({ method: 'GET', url: base, headers: bearer(token) });
    expect(defaults.json<{ meta: { pagination: { per_page: number } } }>().meta.pagination.per_page).toBe(20);
    expect(
      (await app.http.inject({ method: 'GET', url: `${base}?per_page=51`, headers: bearer(token) }))
        .statusCode,
    ).toBe(422);
  });

  it('locks and unlocks a backup, refuses to delete it while locked, then deletes it and what it stored', async () => {
    const { server, token, base } = await setup();
    const uuid = (
      await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} })
    ).json<Backup>().attributes.uuid;
    // Still being made: cannot be deleted yet.
    expect(
      (await app.http.inject({ method: 'DELETE', url: `${base}/${uuid}`, headers: bearer(token) }))
        .statusCode,
    ).toBe(409);
    await drainJobs(app);
    const locked = await app.http.inject({
      method: 'POST',
      url: `${base}/${uuid}/lock`,
      headers: bearer(token),
    });
    expect(locked.json<Backup>().attributes.is_locked).toBe(true);
    const refused = await app.http.inject({
      method: 'DELETE',
      url: `${base}/${uuid}`,
      headers: bearer(token),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json<{ errors: { detail: string }[] }>().errors[0]?.detail).toBe(
      'Cannot delete a backup that is marked as locked.',
    );
    const unlocked = await app.http.inject({
      method: 'POST',
      url: `${base}/${uuid}/lock`,
      headers: bearer(token),
    });
    expect(unlocked.json<Backup>().attributes.is_locked).toBe(false);
    expect(isStored(app, server.id, uuid, format)).toBe(true);
    const deleted = await app.http.inject({
      method: 'DELETE',
      url: `${base}/${uuid}`,
      headers: bearer(token),
    });
    expect(deleted.statusCode).toBe(204);
    expect(isStored(app, server.id, uuid, format)).toBe(false);
    expect(
      (await app.http.inject({ method: 'GET', url: `${base}/${uuid}`, headers: bearer(token) })).statusCode,
    ).toBe(404);
    expect((await events(server.id)).map((e) => e.event)).toEqual([
      'server:backup.start',
      'server:backup.complete',
      'server:backup.lock',
      'server:backup.unlock',
      'server:backup.delete',
    ]);
  });

  it('downloads through a signed link without a token, and refuses a tampered or expired link', async () => {
    const { server, token, base } = await setup();
    const uuid = (
      await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: { name: 'dl' } })
    ).json<Backup>().attributes.uuid;
    await drainJobs(app);
    const link = await app.http.inject({
      method: 'GET',
      url: `${base}/${uuid}/download`,
      headers: bearer(token),
    });
    expect(link.statusCode).toBe(200);
    const url = new URL(link.json<{ object: string; attributes: { url: string } }>().attributes.url);
    expect(link.json<{ object: string }>().object).toBe('signed_url');
    const download = await app.http.inject({ method: 'GET', url: url.pathname + url.search });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-disposition']).toBe('attachment; filename="dl.tar.gz"');
    if (format === 'archive') {
      // The archive as it is stored.
      expect(download.rawPayload.equals(fs.readFileSync(storedPath(app, server.id, uuid, 'archive')))).toBe(
        true,
      );
    } else {
      // A .tar.gz made from the snapshot as it is sent: the volume's files, the same every time.
      expect((await tarGzEntries(download.rawPayload)).filter((e) => e.startsWith('File:')).sort()).toEqual([
        'File:logs/latest.log',
        'File:server.properties',
        'File:world/level.dat',
      ]);
      const again = await app.http.inject({ method: 'GET', url: url.pathname + url.search });
      expect(again.rawPayload.equals(download.rawPayload)).toBe(true);
    }

    const tokenParam = url.searchParams.get('token') ?? '';
    const tampered = `${tokenParam.slice(0, -2)}${tokenParam.endsWith('A') ? 'BB' : 'AA'}`;
    expect(
      (await app.http.inject({ method: 'GET', url: `/download/backup?token=${tampered}` })).statusCode,
    ).toBe(403);
    expect(
      (await app.http.inject({ method: 'GET', url: '/download/backup?token=nonsense' })).statusCode,
    ).toBe(403);
    // The link works for 15 minutes.
    try {
      clockAheadMs = 14 * 60_000;
      expect((await app.http.inject({ method: 'GET', url: url.pathname + url.search })).statusCode).toBe(200);
      clockAheadMs = 16 * 60_000;
      expect((await app.http.inject({ method: 'GET', url: url.pathname + url.search })).statusCode).toBe(403);
    } finally {
      clockAheadMs = 0;
    }
    expect((await events(server.id)).map((e) => e.event)).toContain('server:backup.download');
  });

  it('checks each backup permission for subusers and hides the server from strangers', async () => {
    const { server, token, base } = await setup();
    const uuid = (
      await app.http.inject({ method: 'POST', url: base, headers: bearer(token), payload: {} })
    ).json<Backup>().attributes.uuid;
    await drainJobs(app);
    const reader = await createUser(app);
    await addSubuser(app, server.id, reader, ['backup.read']);
    const readerToken = (await createApiKey(app, reader)).token;
    const stranger = (await createApiKey(app, await createUser(app))).token;
    const as = (t: string, method: 'GET' | 'POST' | 'DELETE', url: string) =>
      app.http.inject({ method, url, headers: bearer(t), payload: method === 'POST' ? {} : undefined });
    expect((await as(readerToken, 'GET', base)).statusCode).toBe(200);
    expect((await as(readerToken, 'GET', `${base}/${uuid}`)).statusCode).toBe(200);
    expect((await as(readerToken, 'POST', base)).statusCode).toBe(403);
    expect((await as(readerToken, 'GET', `${base}/${uuid}/download`)).statusCode).toBe(403);
    expect((await as(readerToken, 'POST', `${base}/${uuid}/lock`)).statusCode).toBe(403);
    expect((await as(readerToken, 'DELETE', `${base}/${uuid}`)).statusCode).toBe(403);
    for (const [method, url] of [
      ['GET', base],
      ['GET', `${base}/${uuid}`],
      ['POST', base],
      ['DELETE', `${base}/${uuid}`],
    ] as const) {
      expect((await as(stranger, method, url)).statusCode).toBe(404);
    }
  });
});

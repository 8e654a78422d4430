/**
 * The backup summary in the server list (`meta.backup_summary`): the last successful backup,
 * the count against the limit, the size, the warnings (last backup failed, none successful in 7
 * days), who sees it, and that a page of servers reads all of their backups in one query.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SelectQueryNode, TableNode, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupSummaryRepository } from '../../src/backups/backup-summary.repository.ts';
import { toBackupRow, type Backup } from '../../src/backups/backup.ts';
import { ServerQueryService } from '../../src/servers/server-query.service.ts';
import { ServerRepository } from '../../src/servers/server.repository.ts';
import { toStoredTime } from '../../src/shared/time.ts';
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
import { ManualClock } from '../support/manual-clock.ts';

interface Summary {
  count: number;
  bytes: number;
  last_successful_at: string | null;
  last_failed_at: string | null;
  warnings: string[];
}

interface ServerItem {
  attributes: { uuid: string; identifier: string; feature_limits: { backups: number } };
  meta: { backup_summary: Summary | null };
}

const HOUR = 3600_000;
const DAY = 24 * HOUR;

describe('the backup summary of each server in the list', () => {
  const time = new ManualClock('2027-03-10T12:00:00.000Z');
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ clock: time.clock });
  });
  afterAll(async () => app.close());

  const get = (url: string, token: string) => app.http.inject({ method: 'GET', url, headers: bearer(token) });

  /** The server's entry in the caller's list, checked against what the single-server endpoint says. */
  async function listed(token: string, identifier: string, query = ''): Promise<ServerItem> {
    const list = await get(`/api/client?per_page=100${query}`, token);
    expect(list.statusCode).toBe(200);
    const item = list.json<{ data: ServerItem[] }>().data.find((s) => s.attributes.identifier === identifier);
    if (item === undefined) throw new Error(`${identifier} is not in the list`);
    const one = await get(`/api/client/servers/${identifier}`, token);
    expect(one.statusCode).toBe(200);
    expect(one.json<ServerItem>().meta.backup_summary).toEqual(item.meta.backup_summary);
    return item;
  }

  const summaryOf = async (token: string, identifier: string) =>
    (await listed(token, identifier)).meta.backup_summary;

  async function ownedServer() {
    const owner = await createUser(app);
    const server = await createServer(app, owner);
    const { token } = await createApiKey(app, owner);
    return { owner, server, token };
  }

  /** A backup row as a finished (or unfinished) job would leave it, `ago` ms before now. */
  async function insertBackup(
    serverId: string,
    state: { ago: number; outcome: 'succeeded' | 'failed' | 'running'; bytes?: number },
  ): Promise<Backup> {
    const at = toStoredTime(new Date(time.clock().getTime() - state.ago));
    const backup: Backup = {
      id: randomUUID(),
      serverId,
      name: `${state.outcome} ${state.ago}`,
      ignoredFiles: [],
      disk: 'local',
      sha256: state.outcome === 'succeeded' ? 'a'.repeat(64) : null,
      bytes: state.outcome === 'succeeded' ? (state.bytes ?? 1000) : 0,
      isSuccessful: state.outcome === 'succeeded',
      isLocked: false,
      isAutomatic: false,
      scheduleId: null,
      createdAt: at,
      completedAt: state.outcome === 'running' ? null : at,
      files: null,
      format: 'archive',
      addedBytes: null,
      progress: null,
    };
    await app.db.kysely.insertInto('backups').values(toBackupRow(backup)).execute();
    return backup;
  }

  /** `2027-03-10T12:00:00.000Z` as the wire writes it. */
  const wire = (stored: string) => `${stored.slice(0, 19)}+00:00`;

  it('says a server without backups was never backed up: 0 of its limit, 0 bytes, none recent', async () => {
    const { server, token } = await ownedServer();
    const item = await listed(token, server.identifier);
    expect(item.attributes.feature_limits.backups).toBe(10);
    expect(item.meta.backup_summary).toEqual({
      count: 0,
      bytes: 0,
      last_successful_at: null,
      last_failed_at: null,
      warnings: ['no_recent_backup'],
    });
  });

  it('counts a backup made through the API: its size, its finish time, and no warning', async () => {
    const { server, token } = await ownedServer();
    fs.writeFileSync(path.join(server.volume, 'server.properties'), 'motd=hello\n'.repeat(500));
    const made = await app.http.inject({
      method: 'POST',
      url: `/api/client/servers/${server.identifier}/backups`,
      headers: bearer(token),
      payload: { name: 'first' },
    });
    expect(made.statusCode).toBe(200);
    // Being made: it counts against the limit, but protects nothing yet.
    expect(await summaryOf(token, server.identifier)).toMatchObject({
      count: 1,
      bytes: 0,
      last_successful_at: null,
      warnings: ['no_recent_backup'],
    });
    expect(await drainJobs(app)).toBe(1);
    const backup = (await get(`/api/client/servers/${server.identifier}/backups`, token)).json<{
      data: { attributes: { bytes: number; completed_at: string; is_successful: boolean } }[];
    }>().data[0]?.attributes;
    expect(backup?.is_successful).toBe(true);
    expect(backup?.bytes).toBeGreaterThan(0);
    expect(await summaryOf(token, server.identifier)).toEqual({
      count: 1,
      bytes: backup?.bytes,
      last_successful_at: backup?.completed_at,
      last_failed_at: null,
      warnings: [],
    });
  });

  it('warns when the most recently finished backup failed, until one succeeds after it', async () => {
    const { server, token } = await ownedServer();
    const good = await insertBackup(server.id, { ago: 2 * HOUR, outcome: 'succeeded', bytes: 1500 });
    const bad = await insertBackup(server.id, { ago: HOUR, outcome: 'failed' });
    // One still being made finishes nothing: the failed one is still the last to finish.
    await insertBackup(server.id, { ago: 1000, outcome: 'running' });
    expect(await summaryOf(token, server.identifier)).toEqual({
      count: 3,
      bytes: 1500,
      last_successful_at: wire(good.completedAt!),
      last_failed_at: wire(bad.completedAt!),
      warnings: ['last_backup_failed'],
    });
    const better = await insertBackup(server.id, { ago: 30 * 60_000, outcome: 'succeeded', bytes: 500 });
    expect(await summaryOf(token, server.identifier)).toEqual({
      count: 4,
      bytes: 2000,
      last_successful_at: wire(better.completedAt!),
      last_failed_at: wire(bad.completedAt!),
      warnings: [],
    });
  });

  it('warns of both when backups only ever failed', async () => {
    const { server, token } = await ownedServer();
    await insertBackup(server.id, { ago: 3 * DAY, outcome: 'failed' });
    await insertBackup(server.id, { ago: DAY, outcome: 'failed' });
    expect(await summaryOf(token, server.identifier)).toMatchObject({
      count: 2,
      bytes: 0,
      last_successful_at: null,
      warnings: ['last_backup_failed', 'no_recent_backup'],
    });
  });

  it('warns when the last successful backup is more than 7 days old, as time passes', async () => {
    const { server, token } = await ownedServer();
    await insertBackup(server.id, { ago: 8 * DAY, outcome: 'succeeded' });
    expect(await summaryOf(token, server.identifier)).toMatchObject({ warnings: ['no_recent_backup'] });

    const other = await ownedServer();
    const recent = await insertBackup(other.server.id, { ago: 7 * DAY - HOUR, outcome: 'succeeded' });
    expect(await summaryOf(other.token, other.server.identifier)).toMatchObject({
      last_successful_at: wire(recent.completedAt!),
      warnings: [],
    });
    time.advance(2 * HOUR);
    try {
      expect(await summaryOf(other.token, other.server.identifier)).toMatchObject({
        last_successful_at: wire(recent.completedAt!),
        warnings: ['no_recent_backup'],
      });
    } finally {
      time.advance(-2 * HOUR);
    }
  });

  it('shows the summary only to those who may read the server’s backups', async () => {
    const { server, token } = await ownedServer();
    await insertBackup(server.id, { ago: HOUR, outcome: 'succeeded', bytes: 4096 });
    const expected = { count: 1, bytes: 4096, warnings: [] };

    const blind = await createUser(app);
    await addSubuser(app, server.id, blind, ['activity.read', 'backup.create', 'user.read']);
    const blindToken = (await createApiKey(app, blind)).token;
    expect((await listed(blindToken, server.identifier)).meta.backup_summary).toBeNull();

    const reader = await createUser(app);
    await addSubuser(app, server.id, reader, ['backup.read']);
    const readerToken = (await createApiKey(app, reader)).token;
    expect(await summaryOf(readerToken, server.identifier)).toMatchObject(expected);

    const admin = await createUser(app, { admin: true });
    const adminToken = (await createApiKey(app, admin)).token;
    expect((await listed(adminToken, server.identifier, '&type=admin')).meta.backup_summary).toMatchObject(
      expected,
    );
    expect(await summaryOf(token, server.identifier)).toMatchObject(expected);
  });

  it('reads the backups of a whole page of servers in one grouped query', async () => {
    const owner = await createUser(app);
    const reader = await createUser(app);
    const servers = [];
    for (let i = 0; i < 6; i++) {
      time.advance(1000); // so the list's order (by creation) is the order they were made in
      const server = await createServer(app, owner, { name: `fleet ${i}` });
      servers.push(server);
      await insertBackup(server.id, { ago: (i + 1) * HOUR, outcome: 'succeeded', bytes: 100 * (i + 1) });
      if (i % 2 === 0) await insertBackup(server.id, { ago: 10 * 60_000, outcome: 'failed' });
      await addSubuser(app, server.id, reader, i < 3 ? ['backup.read'] : ['activity.read']);
    }

    // The list service on a database handle that counts the queries reading `backups`.
    const backupQueries: string[] = [];
    const counter: KyselyPlugin = {
      transformQuery({ node }) {
        const reads =
          SelectQueryNode.is(node) &&
          (node.from?.froms ?? []).some(
            (from) => TableNode.is(from) && from.table.identifier.name === 'backups',
          );
        if (reads) backupQueries.push(node.kind);
        return node;
      },
      transformResult: ({ result }) => Promise.resolve(result),
    };
    const db = app.db.kysely.withPlugin(counter);
    const service = new ServerQueryService({
      servers: new ServerRepository(db),
      backups: new BackupSummaryRepository(db),
      clock: time.clock,
    });

    const page = await service.list(
      { user: owner, apiKeyId: null, sessionId: null },
      { per_page: 50, page: 1 },
    );
    expect(page.items).toHaveLength(6);
    expect(backupQueries).toHaveLength(1);
    expect(page.items.map((item) => [item.backups?.bytes, item.backups?.warnings])).toEqual(
      servers.map((_, i) => [100 * (i + 1), i % 2 === 0 ? ['last_backup_failed'] : []]),
    );

    // A subuser's page: only the servers whose backups they may read are summed, still at once.
    backupQueries.length = 0;
    const seen = await service.list(
      { user: reader, apiKeyId: null, sessionId: null },
      { per_page: 4, page: 1 },
    );
    expect(backupQueries).toHaveLength(1);
    expect(seen.items.map((item) => item.backups?.count ?? null)).toEqual([2, 1, 2, null]);

    // A page of servers none of whose backups the caller may read asks nothing of backups.
    backupQueries.length = 0;
    const last = await service.list(
      { user: reader, apiKeyId: null, sessionId: null },
      { per_page: 2, page: 3 },
    );
    expect(last.items.map((item) => item.backups)).toEqual([null, null]);
    expect(backupQueries).toHaveLength(0);
  });
});

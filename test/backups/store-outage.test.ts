/**
 * Backups and restores while the S3 store is away (s3rver behind a relay that stops listening,
 * so connections are refused): the job waits and tries again, the server keeps its state, and the
 * work completes once the store is back; a store that stays away past the retry window fails the
 * job, with a reason that names the store, and leaves the volume as it was. Each for both formats
 * of backup (AERIE_BACKUP_FORMAT): a whole archive, or a snapshot in the server's repository.
 */
import net, { type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupOf, contents, snapshot, tempDir, writeTree, type TreeSpec } from '../support/archives.ts';
import { BACKUP_FORMATS, formatEnv, storedKey, type BackupFormat } from '../support/backup-formats.ts';
import { activityOfServer, postRestore, restoreJobsOf, serverStatus } from '../support/restores.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  drainJobs,
  importBackup,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import { startS3, type TestS3 } from '../support/s3.ts';

const LIVE: TreeSpec = { 'server.properties': 'motd=live\n', 'live-only.txt': 'live' };
const BACKUP: TreeSpec = { 'server.properties': 'motd=backup\n', 'world/level.dat': 'level' };

/** A TCP relay to the store that can be taken down (connections refused) and brought back. */
async function switchableRelay(port: number) {
  const sockets = new Set<Socket>();
  let server: net.Server | null = null;
  const listen = (on: number) => {
    server = net.createServer((client) => {
      const upstream = net.connect(port, '127.0.0.1');
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
    });
    const listening = server;
    return new Promise<number>((resolve) =>
      listening.listen(on, '127.0.0.1', () => resolve((listening.address() as AddressInfo).port)),
    );
  };
  const relayPort = await listen(0);
  return {
    endpoint: `http://127.0.0.1:${relayPort}`,
    down: async () => {
      const closing = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      if (closing) await new Promise((resolve) => closing.close(resolve));
    },
    up: async () => {
      if (server === null) await listen(relayPort);
    },
  };
}

let s3: TestS3;
let relay: Awaited<ReturnType<typeof switchableRelay>>;
let work: string;
let backupSource: { source: string; archive: string };

beforeAll(async () => {
  s3 = await startS3();
  relay = await switchableRelay(s3.port);
  work = await tempDir();
  backupSource = await backupOf(BACKUP, work);
});
afterAll(async () => {
  await relay.down();
  await s3.close();
});

/**
 * An app on the store through the relay, making (and importing) backups of `format`, with a
 * clock the test moves to each retry's time.
 */
async function appOnRelay(retryMinutes: string, format: BackupFormat) {
  let offsetMs = 0;
  const clock = () => new Date(Date.now() + offsetMs);
  const app = await startTestApp({
    env: { ...s3.env(relay.endpoint), ...formatEnv(format), AERIE_JOB_RETRY_MINUTES: retryMinutes },
    clock,
  });
  const owner = await createUser(app);
  const { token } = await createApiKey(app, owner);
  const server = await createServer(app, owner);
  /** Runs what is due, then moves the clock to the job's next try, `tries` times. */
  const tryAgain = async (jobId: number, tries = 1) => {
    for (let i = 0; i < tries; i++) {
      await drainJobs(app);
      const job = await app.db.kysely
        .selectFrom('jobs')
        .select(['state', 'run_at'])
        .where('id', '=', jobId)
        .executeTakeFirstOrThrow();
      if (job.state !== 'queued') return job.state;
      offsetMs = Math.max(offsetMs, Date.parse(job.run_at) - Date.now() + 1);
    }
    return 'queued';
  };
  return { app, token, server, tryAgain };
}

async function jobRow(app: TestApp, id: number) {
  return app.db.kysely.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe.each(BACKUP_FORMATS)('a restore of a %s backup while the store is away', (format) => {
  it(
    'waits, keeps the server restoring, and completes once the store is back',
    { timeout: 60_000 },
    async () => {
      const { app, token, server, tryAgain } = await appOnRelay('15', format);
      try {
        const backup = await importBackup(app, server.id, backupSource.archive);
        expect(backup.format).toBe(format);
        await writeTree(server.volume, LIVE);
        const before = await snapshot(server.volume);
        await relay.down();
        const res = await postRestore(app, token, server.identifier, backup.uuid, { truncate: true });
        expect(res.statusCode, res.body).toBe(204);
        const [job] = await restoreJobsOf(app, server.id);

        // Five tries (more than a job's three attempts), each refused.
        expect(await tryAgain(job!.id, 5)).toBe('queued');
        expect(await jobRow(app, job!.id)).toMatchObject({
          attempts: 5,
          unreachable_retries: 5,
          error: 'the backup store could not be reached (ECONNREFUSED); the job will be tried again',
        });
        expect(await serverStatus(app, server.id)).toBe('restoring_backup');
        expect(await activityOfServer(app, server.id, 'server:backup.restore-')).toEqual([]);
        expect(await snapshot(server.volume)).toEqual(before);

        await relay.up();
        expect(await tryAgain(job!.id)).toBe('succeeded');
        expect(await contents(server.volume)).toEqual(await contents(backupSource.source));
        expect(await serverStatus(app, server.id)).toBeNull();
        const entries = await activityOfServer(app, server.id, 'server:backup.restore-');
        expect(entries.map((e) => e.event)).toEqual(['server:backup.restore-complete']);
      } finally {
        await relay.up();
        await app.close();
      }
    },
  );

  it(
    'fails past the retry window, naming the store, and leaves the volume as it was',
    { timeout: 60_000 },
    async () => {
      const { app, token, server, tryAgain } = await appOnRelay('2', format);
      try {
        const backup = await importBackup(app, server.id, backupSource.archive);
        expect(backup.format).toBe(format);
        await writeTree(server.volume, LIVE);
        const before = await snapshot(server.volume);
        await relay.down();
        const res = await postRestore(app, token, server.identifier, backup.uuid, { truncate: false });
        expect(res.statusCode, res.body).toBe(204);
        const [job] = await restoreJobsOf(app, server.id);

        expect(await tryAgain(job!.id, 20)).toBe('failed');
        const [failed, ...more] = await activityOfServer(app, server.id, 'server:backup.restore-');
        expect(more).toEqual([]);
        expect(failed).toMatchObject({
          event: 'server:backup.restore-failed',
          properties: { reason: 'the backup store was unreachable for 2 minutes (ECONNREFUSED)' },
        });
        expect(await serverStatus(app, server.id)).toBeNull();
        expect(await snapshot(server.volume)).toEqual(before);
      } finally {
        await relay.up();
        await app.close();
      }
    },
  );
});

describe.each(BACKUP_FORMATS)('a %s backup while the store is away', (format) => {
  it('waits, and is stored once the store is back', { timeout: 60_000 }, async () => {
    const { app, token, server, tryAgain } = await appOnRelay('15', format);
    try {
      await writeTree(server.volume, BACKUP);
      await relay.down();
      const res = await app.http.inject({
        method: 'POST',
        url: `/api/client/servers/${server.identifier}/backups`,
        headers: bearer(token),
        payload: {},
      });
      expect(res.statusCode, res.body).toBe(200);
      const uuid = res.json<{ attributes: { uuid: string } }>().attributes.uuid;
      const job = await app.db.kysely
        .selectFrom('jobs')
        .select('id')
        .where('kind', '=', 'backup.create')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();

      // Three tries refused: as many as a job's attempts.
      expect(await tryAgain(Number(job.id), 3)).toBe('queued');
      expect(await activityOfServer(app, server.id, 'server:backup.fail')).toEqual([]);

      await relay.up();
      expect(await tryAgain(Number(job.id))).toBe('succeeded');
      const row = await app.db.kysely
        .selectFrom('backups')
        .select(['is_successful', 'completed_at', 'format'])
        .where('id', '=', uuid)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ is_successful: 1, format });
      expect(await s3.exists(storedKey(server.id, uuid, format))).toBe(true);
    } finally {
      await relay.up();
      await app.close();
    }
  });
});

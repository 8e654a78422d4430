/**
 * A schedule's backups at the server's backup limit: the oldest unlocked successful backup makes
 * room (one per run, as Pterodactyl), through the same steps as a delete by hand; with every
 * backup locked the run is refused with Pterodactyl's message, and that is recorded. A backup made
 * by hand at the limit is still refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DisplayError, ForbiddenError } from '../../src/shared/errors.ts';
import {
  backupRows,
  scheduledBackup,
  serverActivity,
  serverWithLimit,
} from '../support/automatic-backups.ts';
import { BACKUP_FORMATS, formatEnv, isStored } from '../support/backup-formats.ts';
import { expectError } from '../support/expect-error.ts';
import { bearer, drainJobs, startTestApp, type TestApp } from '../support/harness.ts';
import { ManualClock } from '../support/manual-clock.ts';

const manual = new ManualClock('2026-11-20T01:00:00.000Z');
const HOUR = 3_600_000;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ clock: manual.clock });
});
afterAll(async () => app.close());

/** Makes a schedule's backup an hour after the last one, and runs it. */
async function nextScheduled(serverId: string, on: TestApp = app) {
  manual.advance(HOUR);
  return scheduledBackup(on, serverId);
}

describe.each(BACKUP_FORMATS)('rotation at the backup limit, of %s backups', (format) => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ clock: manual.clock, env: formatEnv(format) });
  });
  afterAll(async () => app.close());

  it('with a limit of 2, a third scheduled backup deletes the oldest: two left, both automatic', async () => {
    const { server, token, base } = await serverWithLimit(app, 2);
    const first = await nextScheduled(server.id, app);
    const second = await nextScheduled(server.id, app);
    expect(isStored(app, server.id, first.id, format)).toBe(true);
    const third = await nextScheduled(server.id, app);

    const rows = await backupRows(app, server.id);
    expect(rows.map((r) => r.id)).toEqual([second.id, third.id]);
    expect(rows.map((r) => [Number(r.is_automatic), Number(r.is_successful), r.schedule_id])).toEqual([
      [1, 1, 7],
      [1, 1, 7],
    ]);
    expect(isStored(app, server.id, first.id, format)).toBe(false);
    expect(isStored(app, server.id, second.id, format)).toBe(true);
    expect(isStored(app, server.id, third.id, format)).toBe(true);
    // The deletion is recorded, as a delete by hand's is (reconcile relies on it).
    const recorded = await app.db.kysely
      .selectFrom('backup_deletions')
      .select('backup_id')
      .where('server_id', '=', server.id)
      .execute();
    expect(recorded.map((r) => r.backup_id)).toEqual([first.id]);

    // The API shows them as automatic.
    const listed = (await app.http.inject({ method: 'GET', url: base, headers: bearer(token) })).json<{
      data: { attributes: { uuid: string; is_automatic: boolean } }[];
    }>();
    expect(listed.data.map((b) => [b.attributes.uuid, b.attributes.is_automatic])).toEqual([
      [third.id, true],
      [second.id, true],
    ]);

    // The schedule, not a user, is the origin of every entry.
    const activity = await serverActivity(app, server.id);
    expect(activity.map((e) => e.event)).toEqual([
      'server:backup.start',
      'server:backup.complete',
      'server:backup.start',
      'server:backup.complete',
      'server:backup.delete',
      'server:backup.start',
      'server:backup.complete',
    ]);
    expect(activity.every((e) => e.actorId === null)).toBe(true);
    const deletion = activity[4]!;
    expect(deletion.properties).toEqual({
      name: first.name,
      schedule_id: 7,
      schedule_name: 'nightly',
      rotated: true,
    });
    // The deletion and the new backup's start are one run: one batch.
    expect(deletion.batch).toBe(activity[5]?.batch);
    expect(activity[5]?.properties).toEqual({ name: third.name, schedule_id: 7, schedule_name: 'nightly' });
  });
});

describe('rotation at the backup limit', () => {
  it('rotates one backup per run, the oldest unlocked successful one, whoever made it', async () => {
    const { server, token, base } = await serverWithLimit(app, 3);
    manual.advance(HOUR);
    const byHand = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'by hand' },
    });
    expect(byHand.statusCode).toBe(200);
    await drainJobs(app);
    const locked = await nextScheduled(server.id);
    await app.http.inject({ method: 'POST', url: `${base}/${locked.id}/lock`, headers: bearer(token) });
    const third = await nextScheduled(server.id);
    // Lowered below what the server holds: still one deleted per run.
    await app.services.servers.update(server.id, { backupLimit: 1 });

    const fourth = await nextScheduled(server.id);
    let rows = await backupRows(app, server.id);
    expect(rows.map((r) => r.id)).toEqual([locked.id, third.id, fourth.id]);

    await nextScheduled(server.id);
    rows = await backupRows(app, server.id);
    expect(rows.map((r) => r.id)).toContain(locked.id);
    expect(rows.map((r) => r.id)).not.toContain(third.id);
    expect(rows).toHaveLength(3);
  });

  it('with every backup locked, the run is refused with the limit message, and that is recorded', async () => {
    const { server, token, base } = await serverWithLimit(app, 2);
    for (let i = 0; i < 2; i += 1) {
      const backup = await nextScheduled(server.id);
      await app.http.inject({ method: 'POST', url: `${base}/${backup.id}/lock`, headers: bearer(token) });
    }
    manual.advance(HOUR);
    const refused = scheduledBackup(app, server.id);
    await expect(refused).rejects.toBeInstanceOf(DisplayError);
    await expect(refused).rejects.toThrow(
      'Cannot create a new backup, this server has reached its limit of 2 backups.',
    );
    expect(await backupRows(app, server.id)).toHaveLength(2);

    const last = (await serverActivity(app, server.id)).at(-1);
    expect(last).toMatchObject({
      event: 'server:backup.fail',
      actorId: null,
      properties: {
        reason: 'Cannot create a new backup, this server has reached its limit of 2 backups.',
        schedule_id: 7,
        schedule_name: 'nightly',
      },
    });
    // The feed says it in words.
    const feed = await app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${server.identifier}/activity`,
      headers: bearer(token),
    });
    expect(
      feed.json<{ data: { attributes: { description: string } }[] }>().data[0]?.attributes.description,
    ).toMatch(
      /^Backup Backup at .* \(schedule nightly\) failed: Cannot create a new backup, this server has reached its limit of 2 backups\.$/,
    );
  });

  it('a backup still being made is not rotated: with nothing else to delete, the run is refused', async () => {
    const { server } = await serverWithLimit(app, 1);
    manual.advance(HOUR);
    await scheduledBackup(app, server.id, false);
    await expect(scheduledBackup(app, server.id, false)).rejects.toThrow(
      'Cannot create a new backup, this server has reached its limit of 1 backups.',
    );
    await drainJobs(app);
  });

  it('a backup made by hand at the limit is still refused with 400', async () => {
    const { server, token, base } = await serverWithLimit(app, 1);
    await nextScheduled(server.id);
    const res = await app.http.inject({
      method: 'POST',
      url: base,
      headers: bearer(token),
      payload: { name: 'by hand' },
    });
    expectError(
      res,
      400,
      'DisplayException',
      'Cannot create a new backup, this server has reached its limit of 1 backups.',
    );
    expect(await backupRows(app, server.id)).toHaveLength(1);
  });

  it('with a limit of 0, a scheduled backup is refused as a backup by hand is', async () => {
    const { server } = await serverWithLimit(app, 0);
    await expect(scheduledBackup(app, server.id)).rejects.toBeInstanceOf(ForbiddenError);
    expect(await backupRows(app, server.id)).toHaveLength(0);
    expect((await serverActivity(app, server.id)).map((e) => e.event)).toEqual(['server:backup.fail']);
  });
});

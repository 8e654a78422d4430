/**
 * What the backups tab tells about each backup and each operation, in Chromium against a running
 * Aerie: the file count beside the size, the ignore patterns on demand, what a restore that
 * deletes all files first loses for good, and notices that name their operation once and give
 * way to its end.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { toBackupRow } from '../../src/backups/backup.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { addSubuser, createServer, createUser } from '../support/harness.ts';
import { storedPath } from '../support/backup-formats.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, usePanel, type PanelServer } from './browser.ts';

const PASSWORD = 'correct horse battery';
const SHA256 = 'ab'.repeat(32);
/** How a card shows SHA256: shortened. */
const CHECKSUM = 'sha256:abababab…';

/** The backup's card on the server page. */
const card = (page: Page, name: string) =>
  page.getByRole('listitem', { name: `Backup ${name}`, exact: true });

/** The notices shown now, in order. */
const notices = (page: Page) => page.locator('.notices .notice').allTextContents();

let minutes = 0;

/** A finished, successful backup row (no archive: enough for what the list and dialogs show). */
async function insertBackup(
  server: PanelServer,
  serverId: string,
  fields: { name: string; bytes?: number; files?: number | null; ignoredFiles?: string[] },
): Promise<void> {
  minutes += 1;
  const at = toStoredTime(new Date(Date.UTC(2026, 0, 1, 0, minutes)));
  await server.app.db.kysely
    .insertInto('backups')
    .values(
      toBackupRow({
        id: randomUUID(),
        serverId,
        name: fields.name,
        ignoredFiles: fields.ignoredFiles ?? [],
        disk: 'local',
        sha256: SHA256,
        bytes: fields.bytes ?? 1000,
        isSuccessful: true,
        isLocked: false,
        isAutomatic: false,
        scheduleId: null,
        createdAt: at,
        completedAt: at,
        files: fields.files ?? null,
        format: 'archive',
        addedBytes: null,
        progress: null,
      }),
    )
    .execute();
}

describe.runIf(RUN_BROWSER_TESTS)('the details of backups in the panel', () => {
  let owner: Awaited<ReturnType<typeof createUser>>;
  const panel = usePanel(async (server) => {
    owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
  });

  /** A server of the owner's with a few files: two of them match `*.log`. */
  async function serverWithFiles(name: string) {
    const server = await createServer(panel.server.app, owner, { name });
    fs.mkdirSync(path.join(server.volume, 'world'));
    fs.writeFileSync(path.join(server.volume, 'world', 'level.dat'), 'level');
    fs.writeFileSync(path.join(server.volume, 'server.properties'), 'motd=hi\n');
    fs.mkdirSync(path.join(server.volume, 'logs'));
    fs.writeFileSync(path.join(server.volume, 'logs', 'latest.log'), 'noise');
    fs.writeFileSync(path.join(server.volume, 'logs', 'old.log'), 'more noise');
    return server;
  }

  it('shows the file count beside the size, in the number its noun takes, and nothing when unknown', async () => {
    const server = await createServer(panel.server.app, owner, { name: 'Counted' });
    await insertBackup(panel.server, server.id, { name: 'single', bytes: 378_000, files: 1 });
    await insertBackup(panel.server, server.id, { name: 'many', bytes: 2_100_000_000, files: 12_345 });
    await insertBackup(panel.server, server.id, { name: 'none', bytes: 0, files: 0 });
    await insertBackup(panel.server, server.id, { name: 'legacy', bytes: 5_000, files: null });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);
    const state = (name: string) => card(page, name).locator('.backup-state').textContent();
    expect(await state('single')).toBe(`378 KB, 1 file · ${CHECKSUM}`);
    expect(await state('many')).toBe(`2.1 GB, 12,345 files · ${CHECKSUM}`);
    expect(await state('none')).toBe(`0 B, 0 files · ${CHECKSUM}`);
    expect(await state('legacy')).toBe(`5.0 KB · ${CHECKSUM}`);
    checkPage(problems);
    await context.close();
  });

  it('shows a backup’s ignore patterns on demand, and nothing for a backup without any', async () => {
    const server = await createServer(panel.server.app, owner, { name: 'Patterned' });
    await insertBackup(panel.server, server.id, { name: 'two', ignoredFiles: ['*.log', '/cache'] });
    await insertBackup(panel.server, server.id, { name: 'one', ignoredFiles: ['!keep.log'] });
    await insertBackup(panel.server, server.id, { name: 'plain' });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);

    const two = card(page, 'two');
    const summary = two.getByText('Ignored: 2 patterns', { exact: true });
    await summary.waitFor();
    // Closed at first: the patterns are in the page but not shown.
    expect(await two.locator('.patterns li').count()).toBe(2);
    expect(await two.getByText('*.log').isVisible()).toBe(false);
    await summary.click();
    expect(await two.getByText('*.log').isVisible()).toBe(true);
    expect(await two.locator('.patterns li').allTextContents()).toEqual(['*.log', '/cache']);
    await summary.click();
    expect(await two.getByText('*.log').isVisible()).toBe(false);

    await card(page, 'one').getByText('Ignored: 1 pattern', { exact: true }).click();
    expect(await card(page, 'one').locator('.patterns li').allTextContents()).toEqual(['!keep.log']);

    await card(page, 'plain').waitFor();
    expect(
      await card(page, 'plain')
        .getByText(/Ignored/)
        .count(),
    ).toBe(0);
    expect(await card(page, 'plain').locator('details').count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it('warns, when a restore deletes all files first, that the files the backup ignored are lost', async () => {
    const server = await createServer(panel.server.app, owner, { name: 'Truncated' });
    await insertBackup(panel.server, server.id, { name: 'patterned', ignoredFiles: ['*.log', '/cache'] });
    await insertBackup(panel.server, server.id, { name: 'whole' });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);

    await card(page, 'patterned').getByRole('button', { name: 'Restore' }).click();
    const dialog = page.getByRole('dialog', { name: 'Restore patterned?' });
    const warning = dialog.getByTestId('truncate-ignored-warning');
    await dialog.getByLabel(/Delete all files first/).waitFor();
    // Laid over the existing files, nothing is lost: no warning.
    expect(await warning.count()).toBe(0);
    await dialog.getByLabel(/Delete all files first/).check();
    await warning.waitFor();
    expect(await warning.locator('p').textContent()).toBe(
      'Files matching these patterns will be deleted and not brought back: the backup left them out, so they are not in it.',
    );
    expect(await warning.locator('.patterns li').allTextContents()).toEqual(['*.log', '/cache']);
    await dialog.getByLabel(/Delete all files first/).uncheck();
    await expect.poll(() => warning.count()).toBe(0);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => dialog.count()).toBe(0);

    // A backup that left nothing out: deleting all files first loses nothing it could bring back.
    await card(page, 'whole').getByRole('button', { name: 'Restore' }).click();
    const whole = page.getByRole('dialog', { name: 'Restore whole?' });
    await whole.getByLabel(/Delete all files first/).check();
    await whole.getByRole('button', { name: 'Delete all files and restore' }).waitFor();
    expect(await whole.getByTestId('truncate-ignored-warning').count()).toBe(0);
    expect(await whole.getByText(/not brought back/).count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it('names a backup once in its notice, and replaces that notice when the backup has finished', async () => {
    const server = await serverWithFiles('Announced');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');

    // Held in the queue, so the notice of its start is seen while it has not finished.
    await panel.server.pauseJobs();
    let name: string;
    try {
      await page.getByRole('button', { name: 'Create backup' }).click();
      const dialog = page.getByRole('dialog', { name: 'Create a backup' });
      await dialog.getByLabel('Ignored files').fill('*.log');
      await dialog.getByRole('button', { name: 'Start backup' }).click();
      await expect.poll(() => notices(page)).toEqual([expect.stringMatching(/^Started backup "Backup at /)]);
      // Unnamed, it is named by its date: "Backup at …", said once, not "Backup Backup at …".
      const started = (await notices(page))[0] ?? '';
      expect(started).toMatch(/^Started backup "Backup at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d"\.$/);
      name = /"(.*)"/.exec(started)?.[1] ?? '';
      await card(page, name).getByText('In progress').waitFor();
    } finally {
      panel.server.resumeJobs();
    }
    // world/level.dat and server.properties: the two logs were left out.
    await card(page, name)
      .getByText(/ B, 2 files · sha256:/)
      .waitFor({ timeout: 30_000 });
    await expect.poll(() => notices(page)).toEqual([`Finished backup "${name}".`]);
    checkPage(problems);
    await context.close();
  });

  it('replaces the notice of a backup that fails with its failure', async () => {
    const server = await serverWithFiles('Doomed');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');
    const db = panel.server.app.db.kysely;
    await panel.server.pauseJobs();
    try {
      await page.getByRole('button', { name: 'Create backup' }).click();
      await page.getByLabel('Name').fill('doomed');
      await page.getByRole('button', { name: 'Start backup' }).click();
      await expect.poll(() => notices(page)).toEqual(['Started backup "doomed".']);
      // It fails, written as the worker writes a failure: its job gone, its row finished unsuccessful.
      const { id } = await db
        .selectFrom('backups')
        .select('id')
        .where('name', '=', 'doomed')
        .executeTakeFirstOrThrow();
      // The only job queued: every other one of this file has run.
      await db.deleteFrom('jobs').where('kind', '=', 'backup.create').where('state', '=', 'queued').execute();
      await db
        .updateTable('backups')
        .set((eb) => ({
          is_successful: 0,
          completed_at: toStoredTime(new Date()),
          revision: eb('revision', '+', 1),
        }))
        .where('id', '=', id)
        .execute();
    } finally {
      panel.server.resumeJobs();
    }
    await card(page, 'doomed').getByText('Failed', { exact: true }).waitFor();
    await expect.poll(() => notices(page)).toEqual(['Backup "doomed" failed.']);
    expect(await page.locator('.notices .notice-error').count()).toBe(1);
    checkPage(problems);
    await context.close();
  });

  /** Makes a backup named `name` through the panel and waits for it to finish (the four files). */
  async function makeBackup(page: Page, name: string): Promise<void> {
    await page.getByRole('button', { name: 'Create backup' }).click();
    await page.getByLabel('Name').fill(name);
    await page.getByRole('button', { name: 'Start backup' }).click();
    await card(page, name)
      .getByText(/ B, 4 files · sha256:/)
      .waitFor({ timeout: 30_000 });
  }

  /**
   * Restores `name` through the panel, held in the queue until the banner and the notice of its
   * start have been seen, and then let run.
   */
  async function restoreThroughPanel(page: Page, name: string): Promise<void> {
    await panel.server.pauseJobs();
    try {
      await card(page, name).getByRole('button', { name: 'Restore' }).click();
      await page
        .getByRole('dialog', { name: `Restore ${name}?` })
        .getByRole('button', { name: 'Restore' })
        .click();
      await page.getByTestId('restoring-banner').waitFor();
      await expect.poll(() => notices(page)).toContain(`Started restoring "${name}".`);
    } finally {
      panel.server.resumeJobs();
    }
    await page.getByTestId('restoring-banner').waitFor({ state: 'detached', timeout: 30_000 });
  }

  /** The notices about restores shown now. */
  const restoreNotices = async (page: Page) => (await notices(page)).filter((text) => /restor/i.test(text));

  it('names a restore once in its notice, which gives way to the restore’s outcome and what it wrote', async () => {
    const server = await serverWithFiles('Restored');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');
    await makeBackup(page, 'before-1.21-update');

    await restoreThroughPanel(page, 'before-1.21-update');
    // The server's own count, from its activity entry "Finished restoring backup … (4 files)".
    await expect
      .poll(() => restoreNotices(page), { timeout: 30_000 })
      .toEqual(['Finished restoring "before-1.21-update" (4 files).']);
    expect(await page.locator('.notices .notice-error').count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it('replaces the notice of a restore that fails with its failure and the server’s reason', async () => {
    const server = await serverWithFiles('Unrestorable');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${server.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');
    await makeBackup(page, 'lost-archive');
    // Its snapshot is gone from the store: the restore fails for real, in the worker.
    const { id } = await panel.server.app.db.kysely
      .selectFrom('backups')
      .select('id')
      .where('server_id', '=', server.id)
      .where('name', '=', 'lost-archive')
      .executeTakeFirstOrThrow();
    fs.rmSync(storedPath(panel.server.app, server.id, id, 'snapshot'));
    const volumeBefore = fs.readFileSync(path.join(server.volume, 'server.properties'), 'utf8');

    await restoreThroughPanel(page, 'lost-archive');
    await expect
      .poll(() => restoreNotices(page), { timeout: 30_000 })
      .toEqual(['Restoring "lost-archive" failed: the snapshot of this backup is missing from storage.']);
    expect(await page.locator('.notices .notice-error').allTextContents()).toEqual([
      'Restoring "lost-archive" failed: the snapshot of this backup is missing from storage.',
    ]);
    // Nothing says the restore finished (the backup's own "Finished backup" notice may remain).
    expect(
      (await notices(page)).filter((text) => /restore has finished|finished restoring/i.test(text)),
    ).toEqual([]);
    expect(fs.readFileSync(path.join(server.volume, 'server.properties'), 'utf8')).toBe(volumeBefore);
    checkPage(problems);
    await context.close();
  });

  it('tells a subuser who may not read the server’s activity only that the restore has finished', async () => {
    const server = await serverWithFiles('Shared');
    const restorer = await createUser(panel.server.app, { username: 'restorer', password: PASSWORD });
    await addSubuser(panel.server.app, server.id, restorer, [
      'backup.read',
      'backup.create',
      'backup.restore',
    ]);
    const { context, page, problems } = await panel.open();
    const activityRequests: string[] = [];
    page.on('request', (request) => {
      if (/^\/api\/client\/servers\/.*\/activity$/.test(new URL(request.url()).pathname))
        activityRequests.push(request.url());
    });
    await logIn(page, 'restorer', PASSWORD, `/servers/${server.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');
    await makeBackup(page, 'shared-nightly');

    await restoreThroughPanel(page, 'shared-nightly');
    await expect.poll(() => restoreNotices(page), { timeout: 30_000 }).toEqual(['The restore has finished.']);
    // The outcome is in a feed this subuser may not read: it is not asked for, nor guessed.
    expect(activityRequests).toEqual([]);
    checkPage(problems);
    await context.close();
  });
});

/**
 * Servers, backups and subusers in the panel, in Chromium against a running Aerie: a backup made
 * and followed to its end by its progress bar, a restore behind its confirmation with the
 * server shown restoring everywhere until it is done, downloads, locks, deletes, the polling
 * that takes over without the event stream, a subuser's narrower view, and managing subusers.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { writeIncompressibleFiles } from '../support/archives.ts';
import { addSubuser, createServer, createUser } from '../support/harness.ts';
import { until } from '../support/wait.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel, type PanelServer } from './browser.ts';

const PASSWORD = 'correct horse battery';

/** The backup's card on the server page. */
const card = (page: Page, name: string) =>
  page.getByRole('listitem', { name: `Backup ${name}`, exact: true });

async function backupState(server: PanelServer, serverId: string) {
  return server.app.db.kysely
    .selectFrom('backups')
    .select(['name', 'is_successful', 'completed_at'])
    .where('server_id', '=', serverId)
    .execute();
}

describe.runIf(RUN_BROWSER_TESTS)('servers and backups in the panel', () => {
  let owner: Awaited<ReturnType<typeof createUser>>;
  let world: Awaited<ReturnType<typeof createServer>>;
  const panel = usePanel(async (server) => {
    owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
    world = await createServer(server.app, owner, { name: 'Survival world' });
    // Enough incompressible data that a backup and a restore take a while to follow.
    await writeIncompressibleFiles(path.join(world.volume, 'region'), 48, 4 * 1024 * 1024);
    fs.writeFileSync(path.join(world.volume, 'server.properties'), 'motd=before\n');
  });

  it('makes a backup and follows its progress bar to the end, live', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Live');

    // The first backup: its size is not known until it ends, so the bar counts bytes.
    const dialog = page.getByRole('dialog', { name: 'Create a backup' });
    const first = card(page, 'first');
    await panel.server.pauseJobs();
    try {
      await page.getByRole('button', { name: 'Create backup' }).click();
      await dialog.getByLabel('Name').fill('first');
      await dialog.getByLabel('Ignored files').fill('*.log\n/cache');
      await dialog.getByRole('button', { name: 'Start backup' }).click();
      await expect.poll(() => dialog.count()).toBe(0);
      await first.getByText('In progress').waitFor();
    } finally {
      panel.server.resumeJobs();
    }
    await first.locator('.progress[data-operation="backup"]').waitFor({ timeout: 20_000 });
    // Its size and files (48 regions and server.properties) beside its checksum.
    await first.getByText(/MB, 49 files · sha256:/).waitFor({ timeout: 60_000 });
    expect(await first.locator('progress').count()).toBe(0);

    // The second: the first one's size makes a percent and a time left.
    const seen = new Set<string>();
    let pictured = false;
    await page.getByRole('button', { name: 'Create backup' }).click();
    await dialog.getByLabel('Name').fill('second');
    await dialog.getByRole('button', { name: 'Start backup' }).click();
    const second = card(page, 'second');
    await until(
      async () => {
        const percent = await second
          .locator('.progress-percent')
          .textContent({ timeout: 200 })
          .catch(() => null);
        if (percent) seen.add(percent);
        if (percent && !pictured && Number(percent.replace(/\D/g, '')) >= 20) {
          pictured = true;
          await screenshot(page, 'server-backups');
        }
        return (await second.getByText(/MB, 49 files · sha256:/).count()) > 0;
      },
      { timeoutMs: 60_000, intervalMs: 20, what: 'the second backup to finish' },
    );
    expect(
      [...seen].some((text) => /^~\d{1,2}%$/.test(text)),
      [...seen].join(' '),
    ).toBe(true);

    const rows = await backupState(panel.server, world.id);
    expect(rows.map((row) => [row.name, row.is_successful])).toEqual(
      expect.arrayContaining([
        ['first', 1],
        ['second', 1],
      ]),
    );
    checkPage(problems);
    await context.close();
  });

  it('restores behind a confirmation, and shows the server restoring everywhere until it is done', async () => {
    fs.writeFileSync(path.join(world.volume, 'server.properties'), 'motd=after\n');
    fs.writeFileSync(path.join(world.volume, 'made-later.txt'), 'not in the backup');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    const list = await context.newPage();
    await list.goto('/servers');
    const listRow = list.locator(`tr[data-server="${world.identifier}"]`);
    await listRow.getByText('Ready').waitFor();

    await panel.server.pauseJobs();
    try {
      await card(page, 'first').getByRole('button', { name: 'Restore' }).click();
      const dialog = page.getByRole('dialog', { name: 'Restore first?' });
      await dialog
        .getByText('Files the backup does not have are kept, unless you choose to delete all files first')
        .waitFor();
      const truncate = dialog.getByLabel(/Delete all files first/);
      expect(await truncate.isChecked()).toBe(false);
      await truncate.check();
      await dialog.getByRole('button', { name: 'Delete all files and restore' }).click();

      // Queued (the worker is paused): restoring on the server page, in the list, in the API.
      await page.getByTestId('restoring-banner').waitFor();
      await page.locator('.page-aside').getByText('Restoring backup').waitFor();
      await list.reload();
      await listRow.getByText('Restoring backup').waitFor();
      expect(await page.getByRole('button', { name: 'Create backup' }).isDisabled()).toBe(true);
      expect(await card(page, 'second').getByRole('button', { name: 'Restore' }).isDisabled()).toBe(true);
      expect(await card(page, 'second').getByRole('button', { name: 'Delete' }).isDisabled()).toBe(true);
    } finally {
      panel.server.resumeJobs();
    }
    // Running: a restore knows its archive's size, so the bar has an exact percent and a time left.
    const banner = page.getByTestId('restoring-banner');
    const percents = new Set<string>();
    let pictured = false;
    await until(
      async () => {
        const bar = banner.locator('.progress[data-operation="restore"]');
        const percent = await bar
          .locator('.progress-percent')
          .textContent({ timeout: 200 })
          .catch(() => null);
        if (percent) percents.add(percent);
        const left = await bar
          .locator('.progress-eta')
          .textContent({ timeout: 200 })
          .catch(() => null);
        if (percent && left && !pictured && Number(percent.replace(/\D/g, '')) >= 10) {
          pictured = true;
          await screenshot(page, 'server-restoring');
        }
        return (await banner.count()) === 0;
      },
      { timeoutMs: 60_000, intervalMs: 20, what: 'the restore to finish' },
    );
    expect(
      [...percents].some((text) => /^\d{1,2}%$/.test(text)),
      [...percents].join(' '),
    ).toBe(true);
    await page.locator('.page-aside').getByText('Ready').waitFor();
    await page.getByText('Finished restoring "first" (49 files).').waitFor();
    await listRow.getByText('Ready').waitFor({ timeout: 10_000 });

    expect(fs.readFileSync(path.join(world.volume, 'server.properties'), 'utf8')).toBe('motd=before\n');
    expect(fs.existsSync(path.join(world.volume, 'made-later.txt'))).toBe(false);

    // The feed tells the restore's start from its end, which counts the files it wrote.
    await page.goto(`/servers/${world.identifier}/activity?event=restore`);
    await expect
      .poll(() => page.locator('li.entry .entry-description').allTextContents())
      .toEqual([
        'Finished restoring backup first (49 files)',
        'Started restoring backup first (files deleted first)',
      ]);
    checkPage(problems);
    await context.close();
  });

  it('downloads through the signed link, locks, unlocks and deletes', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    const second = card(page, 'second');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      second.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/\.tar\.gz$/);
    await download.cancel();

    await second.getByRole('button', { name: 'Lock', exact: true }).click();
    await second.getByText('Locked', { exact: true }).waitFor();
    expect(await second.getByRole('button', { name: 'Delete' }).isDisabled()).toBe(true);
    await second.getByRole('button', { name: 'Unlock' }).click();
    await expect.poll(() => second.getByText('Locked', { exact: true }).count()).toBe(0);

    await second.getByRole('button', { name: 'Delete' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete second?' });
    // Escape leaves it be.
    await page.keyboard.press('Escape');
    await expect.poll(() => confirm.count()).toBe(0);
    expect(await second.count()).toBe(1);
    await second.getByRole('button', { name: 'Delete' }).click();
    await confirm.getByRole('button', { name: 'Delete backup' }).click();
    await expect.poll(() => second.count()).toBe(0);
    // The restore before this one kept the files it replaced as an automatic backup.
    expect((await backupState(panel.server, world.id)).map((row) => row.name)).toEqual([
      'first',
      expect.stringMatching(/^Before restoring first \(restore #\d+\)$/),
    ]);
    checkPage(problems);
    await context.close();
  });

  it('falls back to polling when the event stream cannot be opened', async () => {
    const small = await createServer(panel.server.app, owner, { name: 'Lobby' });
    fs.writeFileSync(path.join(small.volume, 'lobby.txt'), 'hello');
    const { context, page, problems } = await panel.open();
    await context.route('**/events', (route) => route.abort());
    await logIn(page, 'ada', PASSWORD, `/servers/${small.identifier}`);
    await expect.poll(() => page.locator('.live').textContent()).toBe('Polling');
    await page.getByRole('button', { name: 'Create backup' }).click();
    await page.getByLabel('Name').fill('polled');
    await page.getByRole('button', { name: 'Start backup' }).click();
    await card(page, 'polled')
      .getByText(/ B, 1 file · sha256:/)
      .waitFor({ timeout: 30_000 });
    // The aborted stream is the only failure the console saw.
    checkPage(problems.filter((problem) => !/events/.test(problem) && !/ERR_FAILED/.test(problem)));
    await context.close();
  });

  it('counts one file as one, in the words of a restore started and finished', async () => {
    const hut = await createServer(panel.server.app, owner, { name: 'Hut' });
    fs.writeFileSync(path.join(hut.volume, 'hut.txt'), 'one file');
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${hut.identifier}`);
    await page.getByRole('button', { name: 'Create backup' }).click();
    await page.getByLabel('Name').fill('single');
    await page.getByRole('button', { name: 'Start backup' }).click();
    const single = card(page, 'single');
    await single.getByText(/ B, 1 file · sha256:/).waitFor({ timeout: 30_000 });
    await single.getByRole('button', { name: 'Restore' }).click();
    await page
      .getByRole('dialog', { name: 'Restore single?' })
      .getByRole('button', { name: 'Restore' })
      .click();
    await page.getByText('Finished restoring "single" (1 file).').waitFor({ timeout: 30_000 });

    await page.goto(`/servers/${hut.identifier}/activity?event=restore`);
    await expect
      .poll(() => page.locator('li.entry .entry-description').allTextContents())
      .toEqual(['Finished restoring backup single (1 file)', 'Started restoring backup single']);
    await page.goto(`/servers/${hut.identifier}/activity?event=restore-complete`);
    await page.locator('.page-status', { hasText: 'Page 1 of 1 · 1 entry' }).waitFor();
    checkPage(problems);
    await context.close();
  });

  it('shows a subuser only what their permissions allow', async () => {
    const viewer = await createUser(panel.server.app, { username: 'viewer', password: PASSWORD });
    await addSubuser(panel.server.app, world.id, viewer, ['backup.read']);
    const { context, page, problems } = await panel.open();
    await logIn(page, 'viewer', PASSWORD, '/servers');
    const row = page.locator(`tr[data-server="${world.identifier}"]`);
    await row.getByText('Subuser').waitFor();
    await row.getByRole('link', { name: 'Survival world' }).click();
    await card(page, 'first').waitFor();
    expect(await page.getByRole('link', { name: 'Backups' }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Activity', exact: true }).count()).toBe(1); // the main nav's
    expect(
      await page.getByRole('navigation', { name: 'Server sections' }).getByRole('link').allTextContents(),
    ).toEqual(['Backups']);
    for (const action of ['Create backup', 'Download', 'Restore', 'Lock', 'Delete'])
      expect(await page.getByRole('button', { name: action }).count(), action).toBe(0);
    await page.goto(`/servers/${world.identifier}/users`);
    await page.getByText('Your permissions on this server do not include this section.').waitFor();

    // With backup.restore, the restore button appears (and nothing more).
    await addSubuser(panel.server.app, world.id, viewer, ['backup.read', 'backup.restore']);
    await page.goto(`/servers/${world.identifier}`);
    await card(page, 'first').getByRole('button', { name: 'Restore' }).waitFor();
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it('adds a subuser by email with permissions, changes them and removes the subuser', async () => {
    await createUser(panel.server.app, { username: 'grace', email: 'grace@example.com' });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}/users`);
    await page.getByRole('heading', { name: 'Subusers' }).waitFor();

    await page.getByRole('button', { name: 'Add subuser' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a subuser' });
    await dialog.getByLabel('Email address').fill('nobody@example.com');
    await dialog.getByLabel(/See backups/).check();
    await dialog.getByRole('button', { name: 'Add subuser' }).click();
    // An unknown address: the API's 422, next to the field.
    await dialog.locator('.field.invalid .field-error').getByText(/email/i).waitFor();
    await dialog.getByLabel('Email address').fill('grace@example.com');
    await dialog.getByLabel(/Restore backups/).check();
    await dialog.getByRole('button', { name: 'Add subuser' }).click();
    const grace = page.locator('tr[data-subuser="grace"]');
    await grace.getByText('backup.restore').waitFor();
    expect(await grace.locator('code').allTextContents()).toEqual(['backup.read', 'backup.restore']);

    await grace.getByRole('button', { name: 'Edit permissions of grace' }).click();
    const edit = page.getByRole('dialog', { name: 'Permissions of grace' });
    await edit.getByLabel(/Restore backups/).uncheck();
    await edit.getByLabel(/Download backups/).check();
    await edit.getByRole('button', { name: 'Save permissions' }).click();
    await grace.getByText('backup.download').waitFor();
    expect(await grace.locator('code').allTextContents()).toEqual(['backup.read', 'backup.download']);

    await grace.getByRole('button', { name: 'Remove grace' }).click();
    await page
      .getByRole('dialog', { name: 'Remove grace?' })
      .getByRole('button', { name: 'Remove subuser' })
      .click();
    await expect.poll(() => grace.count()).toBe(0);
    checkPage(problems);
    await context.close();
  });
});

/**
 * Automatic backups in the backups tab, in Chromium against a running Aerie: the "Automatic"
 * badge, choosing several backups and deleting them in one request (a locked one refused, and
 * the notice saying so), and the retention policy: its preview of what it keeps and why and what
 * it would delete, shown before it is saved, then saved and read back.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { toBackupRow } from '../../src/backups/backup.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { addSubuser, createServer, createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel, type PanelServer } from './browser.ts';

const PASSWORD = 'correct horse battery';

/** The backup's card on the server page. */
const card = (page: Page, name: string) =>
  page.getByRole('listitem', { name: `Backup ${name}`, exact: true });

/** A finished, successful backup row made at `at` (no archive: enough for the list and a delete). */
async function insertBackup(
  server: PanelServer,
  serverId: string,
  name: string,
  at: string,
  { automatic = true, locked = false }: { automatic?: boolean; locked?: boolean } = {},
): Promise<void> {
  const stored = toStoredTime(new Date(at));
  await server.app.db.kysely
    .insertInto('backups')
    .values(
      toBackupRow({
        id: randomUUID(),
        serverId,
        name,
        ignoredFiles: [],
        disk: 'local',
        sha256: 'ab'.repeat(32),
        bytes: 1000,
        isSuccessful: true,
        isLocked: locked,
        isAutomatic: automatic,
        scheduleId: null,
        createdAt: stored,
        completedAt: stored,
        files: 1,
        format: 'archive',
        addedBytes: null,
        progress: null,
      }),
    )
    .execute();
}

async function backupNames(server: PanelServer, serverId: string): Promise<string[]> {
  const rows = await server.app.db.kysely
    .selectFrom('backups')
    .select('name')
    .where('server_id', '=', serverId)
    .orderBy('name')
    .execute();
  return rows.map((row) => row.name);
}

describe.runIf(RUN_BROWSER_TESTS)('automatic backups, bulk delete and retention in the panel', () => {
  let owner: Awaited<ReturnType<typeof createUser>>;
  let world: Awaited<ReturnType<typeof createServer>>;
  const panel = usePanel(async (server) => {
    owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
    world = await createServer(server.app, owner, { name: 'Survival world' });
    // Automatic backups over four days (UTC, the zone the rules count in), one made by hand and
    // one locked.
    await insertBackup(server, world.id, 'auto-1', '2026-01-01T09:00:00Z');
    await insertBackup(server, world.id, 'auto-locked', '2026-01-01T21:00:00Z', { locked: true });
    await insertBackup(server, world.id, 'auto-2', '2026-01-02T09:00:00Z');
    await insertBackup(server, world.id, 'by-hand', '2026-01-02T12:00:00Z', { automatic: false });
    await insertBackup(server, world.id, 'auto-3', '2026-01-03T09:00:00Z');
    await insertBackup(server, world.id, 'auto-3b', '2026-01-03T21:00:00Z');
    await insertBackup(server, world.id, 'auto-4', '2026-01-04T09:00:00Z');
  });

  it('marks the backups a schedule made as automatic', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await card(page, 'auto-4').getByText('Automatic', { exact: true }).waitFor();
    await card(page, 'auto-locked').getByText('Automatic', { exact: true }).waitFor();
    await card(page, 'auto-locked').getByText('Locked', { exact: true }).waitFor();
    expect(await card(page, 'by-hand').getByText('Automatic', { exact: true }).count()).toBe(0);
    await page.getByTestId('retention-summary').getByText('Retention: Off').waitFor();
    checkPage(problems);
    await context.close();
  });

  it('previews a retention policy before saving it, then saves it and reads it back', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await page.getByRole('button', { name: 'Retention policy' }).click();
    const dialog = page.getByRole('dialog', { name: 'Retention policy' });
    await dialog.getByText('counted in UTC').waitFor();
    const kept = dialog.locator('.retention-columns > div').nth(0);
    const deleted = dialog.locator('.retention-columns > div').nth(1);
    const names = async (column: typeof kept) =>
      column.locator('.retention-list > li > .strong').allTextContents();

    // No rule: everything is kept.
    await kept.getByRole('heading', { name: 'Kept (7)' }).waitFor();
    await deleted.getByText('Nothing would be deleted.').waitFor();

    // The rules as typed: the preview follows, before anything is saved.
    await dialog.getByLabel('Last').fill('1');
    await dialog.getByLabel('Daily').fill('2');
    await deleted.getByRole('heading', { name: 'Would be deleted (3)' }).waitFor();
    expect(await names(deleted)).toEqual(['auto-3', 'auto-2', 'auto-1']);
    expect(await names(kept)).toEqual(['auto-4', 'auto-3b', 'by-hand', 'auto-locked']);
    const reasons = (name: string) =>
      kept
        .locator('.retention-list > li', { hasText: name })
        .locator('.retention-reasons code')
        .allTextContents();
    expect(await reasons('auto-4')).toEqual(['last 1', 'daily 2026-01-04']);
    expect(await reasons('auto-3b')).toEqual(['daily 2026-01-03']);
    expect(await reasons('by-hand')).toEqual(['made by hand']);
    expect(await reasons('auto-locked')).toEqual(['locked']);
    await screenshot(page, 'backup-retention');

    // Not a count: said in the preview, and by the API at the field when saving anyway.
    await dialog.getByLabel('Weekly').fill('many');
    await dialog.getByText('Each rule is a whole number from 0 to 10,000, or empty.').waitFor();
    await dialog.getByRole('button', { name: 'Save policy' }).click();
    const weekly = dialog.locator('.field.invalid', { has: page.getByLabel('Weekly') });
    await weekly
      .locator('.field-error')
      .getByText(/keep_weekly field must be a whole number/)
      .waitFor();
    await dialog.getByLabel('Weekly').fill('');
    await dialog.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    await page
      .getByTestId('retention-summary')
      .getByText('Retention: Keeps automatic backups: the last 1 and 2 daily.')
      .waitFor();
    // Saving deletes nothing: the policy is applied after the next automatic backup.
    expect(await backupNames(panel.server, world.id)).toHaveLength(7);

    // Read back after a reload.
    await page.reload();
    await page.getByRole('button', { name: 'Retention policy' }).click();
    for (const [label, value] of [
      ['Last', '1'],
      ['Hourly', ''],
      ['Daily', '2'],
      ['Weekly', ''],
      ['Monthly', ''],
      ['Yearly', ''],
    ] as const)
      expect(await dialog.getByLabel(label).inputValue(), label).toBe(value);
    await deleted.getByRole('heading', { name: 'Would be deleted (3)' }).waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    const saved = await panel.server.app.db.kysely
      .selectFrom('backup_retention')
      .selectAll()
      .where('server_id', '=', world.id)
      .executeTakeFirst();
    expect(saved).toMatchObject({ keep_last: 1, keep_daily: 2, keep_weekly: null });
    checkPage(problems);
    await context.close();
  });

  it('deletes the chosen backups in one request, and says which it refused and why', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await card(page, 'auto-1').waitFor();
    const deleteSelected = page.getByRole('button', { name: 'Delete selected' });
    expect(await deleteSelected.isDisabled()).toBe(true);

    await page.getByLabel('Select auto-1').check();
    await page.getByLabel('Select auto-locked').check();
    // The keyboard alone: Space checks the focused box.
    await page.getByLabel('Select auto-2').focus();
    await page.keyboard.press('Space');
    await page.getByText('3 selected').waitFor();
    await deleteSelected.click();

    const confirm = page.getByRole('dialog', { name: 'Delete 3 backups?' });
    expect(await confirm.locator('.bulk-list li').allTextContents()).toEqual([
      'auto-2',
      'auto-locked — locked: it will be refused',
      'auto-1',
    ]);
    await confirm.getByRole('button', { name: 'Delete 3 backups' }).click();
    await expect.poll(() => confirm.count()).toBe(0);

    const result = page.getByTestId('bulk-result');
    await result.getByText('Deleted 2 backups: "auto-2" and "auto-1".').waitFor();
    await result.getByText('Not deleted:').waitFor();
    expect(await result.locator('li').allTextContents()).toEqual([
      '"auto-locked": locked. Cannot delete a backup that is marked as locked.',
    ]);
    await expect.poll(() => card(page, 'auto-1').count()).toBe(0);
    expect(await card(page, 'auto-locked').count()).toBe(1);
    expect(await backupNames(panel.server, world.id)).toEqual([
      'auto-3',
      'auto-3b',
      'auto-4',
      'auto-locked',
      'by-hand',
    ]);
    // The selection is emptied.
    await page.getByText('None selected').waitFor();

    // Select all on this page, then none.
    await page.getByLabel('Select all on this page').check();
    await page.getByText('5 selected').waitFor();
    await page.getByLabel('Select all on this page').uncheck();
    await page.getByText('None selected').waitFor();
    await result.getByRole('button', { name: 'Dismiss' }).click();
    await expect.poll(() => result.count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it('shows neither the checkboxes nor the retention policy to a subuser without backup.delete', async () => {
    const viewer = await createUser(panel.server.app, { username: 'viewer', password: PASSWORD });
    await addSubuser(panel.server.app, world.id, viewer, ['backup.read']);
    const { context, page, problems } = await panel.open();
    await logIn(page, 'viewer', PASSWORD, `/servers/${world.identifier}`);
    await card(page, 'auto-4').getByText('Automatic', { exact: true }).waitFor();
    expect(await page.getByRole('checkbox').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Retention policy' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Delete selected' }).count()).toBe(0);
    expect(await page.getByTestId('retention-summary').count()).toBe(0);
    checkPage(problems);
    await context.close();
  });
});

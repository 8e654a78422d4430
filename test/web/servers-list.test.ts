/**
 * The servers list in the panel, in Chromium against a running Aerie: each server's last
 * successful backup, its backups against its limit, their size, and a warning in words for a
 * server whose last backup failed and for one with no successful backup in 7 days; a subuser
 * without `backup.read` sees none of it.
 */
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { toBackupRow } from '../../src/backups/backup.ts';
import type { TestApp } from '../support/harness.ts';
import { addSubuser, createServer, createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, usePanel } from './browser.ts';

const PASSWORD = 'correct horse battery';
const HOUR = 3600_000;

/** A finished backup of the server, `ago` ms before now (the browser's relative times are real). */
async function insertBackup(
  app: TestApp,
  serverId: string,
  backup: { ago: number; successful: boolean; bytes?: number },
): Promise<void> {
  const at = new Date(Date.now() - backup.ago).toISOString();
  await app.db.kysely
    .insertInto('backups')
    .values(
      toBackupRow({
        id: randomUUID(),
        serverId,
        name: `backup ${backup.ago}`,
        ignoredFiles: [],
        disk: 'local',
        sha256: backup.successful ? 'b'.repeat(64) : null,
        bytes: backup.successful ? (backup.bytes ?? 1000) : 0,
        isSuccessful: backup.successful,
        isLocked: false,
        isAutomatic: false,
        scheduleId: null,
        createdAt: at,
        completedAt: at,
        files: null,
        format: 'archive',
        addedBytes: null,
        progress: null,
      }),
    )
    .execute();
}

/** The text of the server's cell under `label`, as a person (or a screen reader) reads it. */
async function cell(page: Page, identifier: string, label: string): Promise<string> {
  const text = await page.locator(`tr[data-server="${identifier}"] td[data-label="${label}"]`).innerText();
  return text.replace(/\s+/g, ' ').trim();
}

describe.runIf(RUN_BROWSER_TESTS)('the servers list in the panel', () => {
  const servers: Record<'healthy' | 'failing' | 'fresh', string> = { healthy: '', failing: '', fresh: '' };
  const panel = usePanel(async ({ app }) => {
    const owner = await createUser(app, { username: 'ada', password: PASSWORD });
    const grace = await createUser(app, { username: 'grace', password: PASSWORD });
    const healthy = await createServer(app, owner, { name: 'Healthy world' });
    const failing = await createServer(app, owner, { name: 'Failing world' });
    const fresh = await createServer(app, owner, { name: 'Fresh world' });
    Object.assign(servers, {
      healthy: healthy.identifier,
      failing: failing.identifier,
      fresh: fresh.identifier,
    });
    await app.db.kysely
      .updateTable('servers')
      .set({ backup_limit: 5 })
      .where('id', '=', healthy.id)
      .execute();
    await insertBackup(app, healthy.id, { ago: 50 * HOUR, successful: true, bytes: 20_000_000 });
    await insertBackup(app, healthy.id, { ago: 26 * HOUR, successful: true, bytes: 20_000_000 });
    await insertBackup(app, healthy.id, { ago: 2 * HOUR, successful: true, bytes: 12_428_800 });
    await insertBackup(app, failing.id, { ago: 3 * 24 * HOUR, successful: true, bytes: 1_500_000 });
    await insertBackup(app, failing.id, { ago: HOUR, successful: false });
    await addSubuser(app, healthy.id, grace, ['activity.read']);
    await addSubuser(app, failing.id, grace, ['backup.read']);
  });

  it('shows each server’s last backup, its count against the limit, its size and its warnings', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/servers');
    await page.locator(`tr[data-server="${servers.fresh}"]`).waitFor();
    const headers = await page.locator('table.servers thead th').allTextContents();
    expect(headers).toEqual(expect.arrayContaining(['Last successful backup', 'Backups', 'Backup size']));

    expect(await cell(page, servers.healthy, 'Last successful backup')).toBe('2 hours ago');
    expect(await cell(page, servers.healthy, 'Backups')).toBe('3 of 5');
    expect(await cell(page, servers.healthy, 'Backup size')).toBe('52 MB');
    expect(await page.locator(`tr[data-server="${servers.healthy}"] .backup-warning`).count()).toBe(0);

    // The last backup to finish failed: said in words, with when, beside the last good one.
    expect(await cell(page, servers.failing, 'Last successful backup')).toBe(
      '3 days ago ⚠ Last backup failed 1 hour ago',
    );
    expect(await cell(page, servers.failing, 'Backups')).toBe('2 of 10');
    expect(await cell(page, servers.failing, 'Backup size')).toBe('1.5 MB');
    const failed = page.locator(`tr[data-server="${servers.failing}"]`).getByText('Last backup failed');
    expect(await failed.isVisible()).toBe(true);

    // Never backed up.
    expect(await cell(page, servers.fresh, 'Last successful backup')).toBe(
      'never ⚠ No successful backup in 7 days',
    );
    expect(await cell(page, servers.fresh, 'Backups')).toBe('0 of 10');
    expect(await cell(page, servers.fresh, 'Backup size')).toBe('0 B');
    const none = page
      .locator(`tr[data-server="${servers.fresh}"]`)
      .getByText('No successful backup in 7 days');
    expect(await none.isVisible()).toBe(true);

    // The warning is in the accessibility tree as text, not only a colour.
    const tree = await page.locator(`tr[data-server="${servers.failing}"]`).ariaSnapshot();
    expect(tree).toContain('Last backup failed');
    checkPage(problems);
    await context.close();
  });

  it('shows a subuser the backups only of the servers whose backups they may read', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'grace', PASSWORD, '/servers');
    await page.locator(`tr[data-server="${servers.failing}"]`).waitFor();
    expect(await cell(page, servers.failing, 'Backups')).toBe('2 of 10');
    expect(await cell(page, servers.failing, 'Last successful backup')).toContain('Last backup failed');
    for (const label of ['Last successful backup', 'Backups', 'Backup size']) {
      expect(await cell(page, servers.healthy, label)).toBe('— not shown to you');
    }
    checkPage(problems);
    await context.close();
  });
});

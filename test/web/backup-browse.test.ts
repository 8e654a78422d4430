/**
 * A snapshot backup's files in the panel, in Chromium against a running Aerie: browsing its
 * folders (by their links, the path above them and Back), a folder of more entries than a page
 * holds, downloading one file or one folder, choosing files and folders in several folders and
 * restoring only those (laid over the server's files, or each path made exactly as the backup has
 * it), a backup that cannot be browsed, and who is offered what.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toBackupRow } from '../../src/backups/backup.ts';
import { toStoredTime } from '../../src/shared/time.ts';
import { archiveEntries, tempDir } from '../support/archives.ts';
import { addSubuser, bearer, createApiKey, createServer, createUser } from '../support/harness.ts';
import { restoreJobsOf, serverStatus } from '../support/restores.ts';
import { backupThroughApi, SNAPSHOTS, type BackupAttributes } from '../support/snapshots.ts';
import { until } from '../support/wait.ts';
import {
  checkPage,
  launchBrowser,
  logIn,
  openPage,
  RUN_BROWSER_TESTS,
  startPanelServer,
  type PanelServer,
} from './browser.ts';

const PASSWORD = 'correct horse battery';
const LEVEL = randomBytes(3000);
/** More entries than a page of a folder holds (1,000). */
const MANY = 1001;

/** The backup's card on the server page. */
const card = (page: Page, name: string) =>
  page.getByRole('listitem', { name: `Backup ${name}`, exact: true });

/** The browser of a backup's files. */
const browser = (page: Page, name: string) => page.getByRole('dialog', { name: `Files of ${name}` });

/** The paths of the entries shown, in order. */
const shownPaths = (page: Page) =>
  page.evaluate<string[]>(
    `[...document.querySelectorAll('dialog[open] tbody tr')].map((row) => row.getAttribute('data-path'))`,
  );

/** The names of the path above the folder shown, root first. */
const crumbs = (page: Page, name: string) =>
  browser(page, name).getByRole('navigation', { name: 'Folder' }).getByRole('link').allTextContents();

/** The notices shown now, in order. */
const notices = (page: Page) => page.locator('.notices .notice').allTextContents();

describe.runIf(RUN_BROWSER_TESTS)('a backup’s files in the panel', () => {
  let server: PanelServer;
  let chromium: Browser;
  let world: Awaited<ReturnType<typeof createServer>>;
  let nightly: BackupAttributes;
  let token: string;

  const open = (options: BrowserContextOptions = {}) => openPage(chromium, server.url, options);
  const file = (rel: string) => path.join(world.volume, rel);

  beforeAll(async () => {
    // Snapshot backups, as the panel is set up by default: only those can be browsed.
    [server, chromium] = await Promise.all([startPanelServer(SNAPSHOTS), launchBrowser()]);
    const owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
    ({ token } = await createApiKey(server.app, owner));
    world = await createServer(server.app, owner, { name: 'Survival world' });
    fs.writeFileSync(file('server.properties'), 'motd=before\n');
    fs.mkdirSync(file('world/region'), { recursive: true });
    fs.writeFileSync(file('world/level.dat'), LEVEL);
    fs.writeFileSync(file('world/region/r.0.0.mca'), 'region');
    fs.mkdirSync(file('plugins'));
    fs.writeFileSync(file('plugins/config.yml'), 'enabled: true\n');
    fs.mkdirSync(file('empty'));
    fs.mkdirSync(file('many'));
    for (let i = 0; i < MANY; i++) fs.writeFileSync(file(`many/f${String(i).padStart(4, '0')}.txt`), `${i}`);
    // Made by the test's own worker (the panel's is held meanwhile), so it is done when this returns.
    await server.pauseJobs();
    try {
      nightly = await backupThroughApi(server.app, token, world, { name: 'nightly' });
    } finally {
      server.resumeJobs();
    }
    expect(nightly.format).toBe('snapshot');
  }, 120_000);

  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  it('opens folders by their links, goes back up by the path above them, and tells an empty folder', async () => {
    const { context, page, problems } = await open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await card(page, 'nightly').getByRole('button', { name: 'Browse files' }).click();
    const dialog = browser(page, 'nightly');
    await dialog.locator('tbody tr').first().waitFor();

    // Folders first, then files, each by name.
    expect(await shownPaths(page)).toEqual(['/empty', '/many', '/plugins', '/world', '/server.properties']);
    expect(await crumbs(page, 'nightly')).toEqual(['All files']);
    const properties = dialog.locator('tr[data-path="/server.properties"]');
    expect(await properties.locator('td[data-label="Size"]').textContent()).toBe('12 B');
    expect(await dialog.locator('tr[data-path="/world"] td[data-label="Size"]').textContent()).toBe('—');
    expect(await properties.locator('td[data-label="Modified"] time').getAttribute('datetime')).toMatch(
      /^\d{4}-\d\d-\d\dT/,
    );

    await dialog.getByRole('link', { name: 'world', exact: true }).click();
    await expect.poll(() => shownPaths(page)).toEqual(['/world/region', '/world/level.dat']);
    expect(new URL(page.url()).searchParams.get('path')).toBe('/world');
    expect(await dialog.locator('tr[data-path="/world/level.dat"] td[data-label="Size"]').textContent()).toBe(
      '3.0 KB',
    );
    await dialog.getByRole('link', { name: 'region', exact: true }).click();
    await expect.poll(() => shownPaths(page)).toEqual(['/world/region/r.0.0.mca']);
    expect(await crumbs(page, 'nightly')).toEqual(['All files', 'world', 'region']);
    const here = dialog.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'region' });
    expect(await here.getAttribute('aria-current')).toBe('page');
    // The focus moves to the folder opened (its link is gone): where the user now is.
    expect(
      await page.evaluate(
        '[document.activeElement?.textContent, document.activeElement?.getAttribute("aria-current")]',
      ),
    ).toEqual(['region', 'page']);

    // Up one folder by the path, then to the root.
    await dialog.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'world' }).click();
    await expect.poll(() => shownPaths(page)).toEqual(['/world/region', '/world/level.dat']);
    await dialog.getByRole('link', { name: 'All files' }).click();
    await expect.poll(() => crumbs(page, 'nightly')).toEqual(['All files']);
    expect((await shownPaths(page)).length).toBe(5);

    // Back goes back into the folder before, as the address keeps where the browser is.
    await page.goBack();
    await expect.poll(() => crumbs(page, 'nightly')).toEqual(['All files', 'world']);

    await dialog.getByRole('link', { name: 'All files' }).click();
    await dialog.getByRole('link', { name: 'empty', exact: true }).click();
    await dialog.getByText('This folder is empty.').waitFor();
    expect(await dialog.locator('table').count()).toBe(0);

    // A folder the backup does not have: the API's words.
    await page.goto(`/servers/${world.identifier}?browse=${nightly.uuid}&path=/nowhere`);
    await browser(page, 'nightly')
      .getByRole('alert')
      .getByText('This backup has no such directory.')
      .waitFor();

    // Closed, the address no longer names the backup.
    await browser(page, 'nightly').getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => browser(page, 'nightly').count()).toBe(0);
    expect(new URL(page.url()).searchParams.has('browse')).toBe(false);
    checkPage(problems);
    await context.close();
  });

  it('pages through a folder of more entries than a page holds', async () => {
    const { context, page, problems } = await open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}?browse=${nightly.uuid}&path=/many`);
    const dialog = browser(page, 'nightly');
    await expect.poll(async () => (await shownPaths(page)).length).toBe(1000);
    const pages = dialog.getByRole('navigation', { name: 'Pages of entries' });
    expect(await pages.locator('.page-status').textContent()).toBe('Page 1 of 2 · 1,001 entries');
    await pages.getByRole('link', { name: 'Next →' }).click();
    await expect.poll(() => shownPaths(page)).toEqual(['/many/f1000.txt']);
    expect(await pages.locator('.page-status').textContent()).toBe('Page 2 of 2 · 1,001 entries');
    checkPage(problems);
    await context.close();
  });

  it('downloads one file, byte for byte, and a folder as a .tar.gz of what it holds', async () => {
    const { context, page, problems } = await open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}?browse=${nightly.uuid}&path=/world`);
    const dialog = browser(page, 'nightly');

    const [level] = await Promise.all([
      page.waitForEvent('download'),
      dialog.getByRole('button', { name: 'Download level.dat' }).click(),
    ]);
    expect(level.suggestedFilename()).toBe('level.dat');
    expect(fs.readFileSync(await level.path())).toEqual(LEVEL);

    const [region] = await Promise.all([
      page.waitForEvent('download'),
      dialog.getByRole('button', { name: 'Download region' }).click(),
    ]);
    expect(region.suggestedFilename()).toBe('region.tar.gz');
    const work = await tempDir('aerie-browse-');
    const saved = path.join(work, 'region.tar.gz');
    await region.saveAs(saved);
    expect((await archiveEntries(saved)).filter((entry) => entry.endsWith('r.0.0.mca'))).toHaveLength(1);
    fs.rmSync(work, { recursive: true, force: true });
    checkPage(problems);
    await context.close();
  });

  /** Chooses /server.properties and /world in the browser and opens the restore's confirmation. */
  async function chooseAndConfirm(page: Page) {
    const dialog = browser(page, 'nightly');
    await dialog.getByLabel('Select server.properties').check();
    await dialog.getByLabel('Select world').check();
    // A folder chosen brings all it holds: inside it, each entry reads as chosen and cannot be unchosen.
    await dialog.getByRole('link', { name: 'world', exact: true }).click();
    const level = dialog.getByLabel('Select level.dat');
    await level.waitFor();
    expect(await level.isChecked()).toBe(true);
    expect(await level.isDisabled()).toBe(true);
    // The choice is kept from folder to folder.
    const choice = dialog.getByRole('group', { name: 'Selected files' });
    expect(await choice.getByText('2 paths selected').count()).toBe(1);
    expect(
      await choice.getByRole('list', { name: 'Selected paths' }).locator('code').allTextContents(),
    ).toEqual(['/server.properties', '/world/']);
    await choice.getByRole('button', { name: 'Restore selected' }).click();
    const confirm = page.getByRole('dialog', { name: 'Restore 2 paths from nightly?' });
    expect(
      await confirm.getByRole('list', { name: 'Paths to restore' }).locator('code').allTextContents(),
    ).toEqual(['/server.properties', '/world']);
    return confirm;
  }

  /** The bodies of the restores the page asks for. */
  function restoreRequests(page: Page): unknown[] {
    const bodies: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname.endsWith('/restore'))
        bodies.push(request.postDataJSON());
    });
    return bodies;
  }

  /** Waits until the server has finished restoring. */
  const restored = () =>
    until(async () => (await serverStatus(server.app, world.id)) === null, {
      what: 'the restore to finish',
    });

  it('restores only the chosen file and folder, laid over what is there, and leaves the rest as it is', async () => {
    fs.writeFileSync(file('server.properties'), 'motd=after\n');
    fs.writeFileSync(file('world/level.dat'), 'changed');
    fs.writeFileSync(file('world/added.txt'), 'made since');
    fs.writeFileSync(file('plugins/config.yml'), 'enabled: false\n');
    const { context, page, problems } = await open();
    const bodies = restoreRequests(page);
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}?browse=${nightly.uuid}`);
    const confirm = await chooseAndConfirm(page);
    await confirm
      .getByText("Only the chosen paths are restored; the rest of the server's files are left as they are.")
      .waitFor();
    const truncate = confirm.getByLabel(/Delete what is there first/);
    expect(await truncate.isChecked()).toBe(false);
    expect(await confirm.getByLabel(/Keep an undo backup/).isChecked()).toBe(true);
    await confirm.getByLabel(/Keep an undo backup/).uncheck();
    await confirm.getByRole('button', { name: 'Restore', exact: true }).click();

    // Both dialogs close, and the restore is announced as a whole restore is.
    await expect.poll(() => browser(page, 'nightly').count()).toBe(0);
    await expect.poll(() => confirm.count()).toBe(0);
    await expect.poll(() => notices(page)).toContain('Started restoring "nightly".');
    expect(bodies).toEqual([
      { truncate: false, undo_backup: false, files: ['/server.properties', '/world'] },
    ]);
    await restored();

    expect(fs.readFileSync(file('server.properties'), 'utf8')).toBe('motd=before\n');
    expect(fs.readFileSync(file('world/level.dat'))).toEqual(LEVEL);
    // Laid over: what the backup does not have is kept, and what was not chosen is untouched.
    expect(fs.readFileSync(file('world/added.txt'), 'utf8')).toBe('made since');
    expect(fs.readFileSync(file('plugins/config.yml'), 'utf8')).toBe('enabled: false\n');
    const jobs = await restoreJobsOf(server.app, world.id);
    expect(jobs.at(-1)?.payload).toMatchObject({ truncate: false, files: ['server.properties', 'world'] });
    checkPage(problems);
    await context.close();
  });

  it('makes each chosen path exactly as the backup has it when asked to delete first, keeping an undo backup', async () => {
    fs.writeFileSync(file('server.properties'), 'motd=again\n');
    fs.writeFileSync(file('world/level.dat'), 'changed again');
    fs.writeFileSync(file('world/region/r.1.0.mca'), 'made since');
    fs.writeFileSync(file('plugins/config.yml'), 'enabled: maybe\n');
    const { context, page, problems } = await open();
    const bodies = restoreRequests(page);
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}?browse=${nightly.uuid}`);
    const confirm = await chooseAndConfirm(page);
    await confirm.getByLabel(/Delete what is there first/).check();
    await confirm.getByText('Files added under a chosen folder since the backup are removed.').waitFor();
    await confirm.getByRole('button', { name: 'Delete and restore' }).click();
    await expect.poll(() => browser(page, 'nightly').count()).toBe(0);
    await expect.poll(() => notices(page)).toContain('Started restoring "nightly".');
    expect(bodies).toEqual([{ truncate: true, undo_backup: true, files: ['/server.properties', '/world'] }]);
    await restored();

    expect(fs.readFileSync(file('server.properties'), 'utf8')).toBe('motd=before\n');
    expect(fs.readFileSync(file('world/level.dat'))).toEqual(LEVEL);
    expect(fs.existsSync(file('world/added.txt'))).toBe(false);
    expect(fs.existsSync(file('world/region/r.1.0.mca'))).toBe(false);
    expect(fs.readFileSync(file('world/region/r.0.0.mca'), 'utf8')).toBe('region');
    expect(fs.readFileSync(file('plugins/config.yml'), 'utf8')).toBe('enabled: maybe\n');
    // The files as they were before it, kept as an automatic backup.
    await card(page, 'nightly').waitFor();
    await expect.poll(() => page.locator('.backup .badge-automatic').count()).toBe(1);
    checkPage(problems);
    await context.close();
  });

  it('shows the API’s words when a backup cannot be browsed, and asks for the download permission', async () => {
    // A backup whose archive is not in storage: browsing it is refused, whatever the reason is.
    const at = toStoredTime(new Date());
    const lost = randomUUID();
    await server.app.db.kysely
      .insertInto('backups')
      .values(
        toBackupRow({
          id: lost,
          serverId: world.id,
          name: 'lost-archive',
          ignoredFiles: [],
          disk: 'local',
          sha256: 'ab'.repeat(32),
          bytes: 1000,
          isSuccessful: true,
          isLocked: false,
          isAutomatic: false,
          scheduleId: null,
          createdAt: at,
          completedAt: at,
          files: 1,
          format: 'archive',
          addedBytes: null,
          progress: null,
        }),
      )
      .execute();
    const refusal = await server.app.http.inject({
      method: 'GET',
      url: `/api/client/servers/${world.identifier}/backups/${lost}/files/list`,
      headers: bearer(token),
    });
    expect(refusal.statusCode).toBeGreaterThanOrEqual(400);
    const reason = refusal.json<{ errors: { detail: string }[] }>().errors[0]?.detail ?? '';
    expect(reason).not.toBe('');

    const { context, page, problems } = await open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await card(page, 'lost-archive').getByRole('button', { name: 'Browse files' }).click();
    const refused = browser(page, 'lost-archive');
    await refused.getByRole('alert').getByText(reason, { exact: true }).waitFor();
    expect(await refused.locator('table').count()).toBe(0);
    await refused.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => refused.count()).toBe(0);
    await context.close();

    // A subuser who may see backups but not download them is not offered to browse them; one who
    // may download but not restore browses without choosing anything.
    const reader = await createUser(server.app, { username: 'reader', password: PASSWORD });
    const downloader = await createUser(server.app, { username: 'downloader', password: PASSWORD });
    await addSubuser(server.app, world.id, reader, ['backup.read']);
    await addSubuser(server.app, world.id, downloader, ['backup.read', 'backup.download']);
    const asReader = await open();
    await logIn(asReader.page, 'reader', PASSWORD, `/servers/${world.identifier}`);
    await card(asReader.page, 'nightly').waitFor();
    expect(await card(asReader.page, 'nightly').getByRole('button', { name: 'Browse files' }).count()).toBe(
      0,
    );
    await asReader.context.close();
    const asDownloader = await open();
    await logIn(asDownloader.page, 'downloader', PASSWORD, `/servers/${world.identifier}`);
    await card(asDownloader.page, 'nightly').getByRole('button', { name: 'Browse files' }).click();
    const dialog = browser(asDownloader.page, 'nightly');
    await dialog.getByRole('button', { name: 'Download server.properties' }).waitFor();
    expect(await dialog.getByRole('checkbox').count()).toBe(0);
    expect(await dialog.getByRole('button', { name: 'Restore selected' }).count()).toBe(0);
    checkPage([...problems, ...asReader.problems, ...asDownloader.problems]);
    await asDownloader.context.close();
  });
});

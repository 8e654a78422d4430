/**
 * The schedules tab, in Chromium against a running Aerie (whose worker runs the schedule's
 * tasks): a schedule made from a preset, its cron in words and its next run; required fields
 * checked before sending and the API's refusals shown at their field; a change; a backup task
 * added and changed; a run now that makes an automatic backup; deletes behind a confirmation;
 * and a subuser who sees only the buttons their permissions allow.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { addSubuser, createServer, createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel, type PanelServer } from './browser.ts';

const PASSWORD = 'correct horse battery';

/** A schedule's card on the schedules tab. */
const card = (page: Page, name: string) =>
  page.getByRole('listitem', { name: `Schedule ${name}`, exact: true });

async function scheduleRows(server: PanelServer, serverId: string) {
  return server.app.db.kysely
    .selectFrom('schedules')
    .selectAll()
    .where('server_id', '=', serverId)
    .orderBy('id')
    .execute();
}

async function taskRows(server: PanelServer, scheduleId: number) {
  return server.app.db.kysely
    .selectFrom('schedule_tasks')
    .selectAll()
    .where('schedule_id', '=', scheduleId)
    .orderBy('sequence_id')
    .execute();
}

describe.runIf(RUN_BROWSER_TESTS)('schedules in the panel', () => {
  let owner: Awaited<ReturnType<typeof createUser>>;
  let world: Awaited<ReturnType<typeof createServer>>;
  const panel = usePanel(async (server) => {
    owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
    world = await createServer(server.app, owner, { name: 'Survival world' });
    fs.writeFileSync(path.join(world.volume, 'server.properties'), 'motd=hi\n');
    fs.writeFileSync(path.join(world.volume, 'latest.log'), 'noise');
  });

  it('creates a schedule from a preset, with its cron in words and its next run', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await page
      .getByRole('navigation', { name: 'Server sections' })
      .getByRole('link', { name: 'Schedules' })
      .click();
    await page.getByRole('heading', { name: 'Schedules' }).waitFor();
    await page.getByText('No schedules yet.').waitFor();

    await page.getByRole('button', { name: 'Create schedule' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a schedule' });
    // Nightly until another preset is chosen; each field says what it takes.
    expect(await dialog.getByRole('button', { name: 'Nightly' }).getAttribute('aria-pressed')).toBe('true');
    await dialog.getByText('Every day at 03:00').waitFor();

    // Required fields are checked before anything is sent: the name, and each cron field.
    let posted = 0;
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/schedules')) posted += 1;
    });
    await dialog.getByLabel('Minute').fill('');
    await dialog.getByRole('button', { name: 'Create schedule' }).click();
    await dialog.getByText('The name field is required.').waitFor();
    await dialog.getByText('The minute field is required.').waitFor();
    expect(await page.evaluate('document.activeElement?.getAttribute("name")')).toBe('name');
    expect(await dialog.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    expect(posted).toBe(0);

    // A field that is no cron field: the API's refusal, at that field.
    await dialog.getByLabel('Name').fill('hourly backup');
    await dialog.getByLabel('Minute').fill('61');
    await dialog.getByRole('button', { name: 'Create schedule' }).click();
    const minute = dialog.locator('.field.invalid', { has: page.getByLabel('Minute') });
    await minute
      .locator('.field-error')
      .getByText(/minute field is not a valid cron field/)
      .waitFor();
    expect(posted).toBe(1);

    // The preset fills the five fields.
    await dialog.getByRole('button', { name: 'Hourly' }).click();
    expect(await dialog.getByRole('button', { name: 'Hourly' }).getAttribute('aria-pressed')).toBe('true');
    expect(await dialog.getByLabel('Minute').inputValue()).toBe('0');
    expect(await dialog.getByLabel('Hour').inputValue()).toBe('*');
    await dialog.getByText('Every hour at minute 0').waitFor();
    await dialog.getByRole('button', { name: 'Create schedule' }).click();
    await expect.poll(() => dialog.count()).toBe(0);

    const hourly = card(page, 'hourly backup');
    await hourly.getByText('Every hour at minute 0').waitFor();
    await hourly.getByText('Active', { exact: true }).waitFor();
    await hourly.getByText('Never', { exact: true }).waitFor();
    const [row] = await scheduleRows(panel.server, world.id);
    expect(row?.cron_minute).toBe('0');
    expect(row?.cron_hour).toBe('*');
    // The next run: relative, with the exact time beside it, and the API's time as its datetime.
    const next = hourly.locator('dd time');
    const when = await next.getAttribute('datetime');
    expect(when).not.toBeNull();
    const listed = (await page.evaluate(
      async (url) => (await fetch(url, { headers: { accept: 'application/json' } })).json(),
      `/api/client/servers/${world.identifier}/schedules`,
    )) as { data: { attributes: { next_run_at: string } }[] };
    expect(when).toBe(listed.data[0]?.attributes.next_run_at);
    expect(new Date(when ?? '').getUTCMinutes()).toBe(0);
    expect(await next.textContent()).toMatch(/^in \d+ minutes? \(.+ UTC\)$|^just now \(.+\)$/);
    checkPage(problems);
    await context.close();
  });

  it('changes a schedule, and adds, changes and deletes a backup task', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}/schedules`);
    const schedule = card(page, 'hourly backup');
    await schedule.getByRole('button', { name: 'Edit schedule hourly backup' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit hourly backup' });
    await dialog.getByLabel('Name').fill('weekly backup');
    await dialog.getByRole('button', { name: 'Weekly' }).click();
    await dialog.getByText('Every Monday at 04:30').waitFor();
    await dialog.getByLabel(/^Active/).uncheck();
    await dialog.getByLabel(/^Only when the server is online/).check();
    await dialog.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(() => dialog.count()).toBe(0);

    const weekly = card(page, 'weekly backup');
    await weekly.getByText('Every Monday at 04:30').waitFor();
    await weekly.getByText('Inactive', { exact: true }).waitFor();
    await weekly.getByText('Only when online').waitFor();
    await weekly.getByText('None: the schedule is inactive').waitFor();
    // Anything the words do not cover is shown as the expression itself.
    await weekly.getByRole('button', { name: 'Edit schedule weekly backup' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit weekly backup' });
    await edit.getByLabel('Hour').fill('9-17');
    await edit.getByLabel(/^Active/).check();
    await edit.getByRole('button', { name: 'Save schedule' }).click();
    await expect.poll(() => edit.count()).toBe(0);
    await weekly.locator('.schedule-cron').getByText('30 9-17 * * 1', { exact: true }).waitFor();
    expect(await weekly.locator('.schedule-cron .strong').count()).toBe(0);
    await weekly.getByText('Active', { exact: true }).waitFor();
    await weekly.locator('dd time').first().waitFor();
    // Back to the preset for the rest.
    await weekly.getByRole('button', { name: 'Edit schedule weekly backup' }).click();
    await edit.getByRole('button', { name: 'Weekly' }).click();
    await edit.getByRole('button', { name: 'Save schedule' }).click();
    await weekly.getByText('Every Monday at 04:30').waitFor();

    // A task: nothing to run until it has one.
    await weekly.getByText('No tasks yet').waitFor();
    expect(await weekly.getByRole('button', { name: 'Run now' }).isDisabled()).toBe(true);
    await weekly.getByRole('button', { name: 'Add a task to weekly backup' }).click();
    const add = page.getByRole('dialog', { name: 'Add a task to weekly backup' });
    await add.getByLabel('Ignored files').fill('*.log\n/cache');
    // Required, then within the API's limit (its 422, at the field).
    await add.getByLabel('Time offset (seconds)').fill('');
    await add.getByRole('button', { name: 'Add task' }).click();
    await add.getByText('The time offset field is required.').waitFor();
    await add.getByLabel('Time offset (seconds)').fill('901');
    await add.getByRole('button', { name: 'Add task' }).click();
    await add
      .locator('.field.invalid .field-error')
      .getByText(/time_offset/)
      .waitFor();
    await add.getByLabel('Time offset (seconds)').fill('30');
    await add.getByRole('button', { name: 'Add task' }).click();
    await expect.poll(() => add.count()).toBe(0);
    const task = weekly.getByRole('listitem', { name: 'Task 1' });
    await task
      .getByText('Back up the server, 30 seconds after the run starts; stops the run if it fails')
      .waitFor();
    await task.getByText('Ignored: 2 patterns').click();
    expect(await task.locator('.patterns code').allTextContents()).toEqual(['*.log', '/cache']);

    await task.getByRole('button', { name: 'Edit task 1' }).click();
    const change = page.getByRole('dialog', { name: 'Edit task 1 of weekly backup' });
    expect(await change.getByLabel('Ignored files').inputValue()).toBe('*.log\n/cache');
    await change.getByLabel('Ignored files').fill('*.log');
    await change.getByLabel('Time offset (seconds)').fill('0');
    await change.getByLabel(/^Continue on failure/).check();
    await change.getByRole('button', { name: 'Save task' }).click();
    await task.getByText('Back up the server, at once; continues on failure').waitFor();
    const [row] = await scheduleRows(panel.server, world.id);
    const tasks = await taskRows(panel.server, Number(row?.id));
    expect(
      tasks.map((t) => [t.action, t.payload, Number(t.time_offset), Boolean(Number(t.continue_on_failure))]),
    ).toEqual([['backup', '*.log', 0, true]]);

    // A second task, deleted behind a confirmation.
    await weekly.getByRole('button', { name: 'Add a task to weekly backup' }).click();
    await add.getByRole('button', { name: 'Add task' }).click();
    const second = weekly.getByRole('listitem', { name: 'Task 2' });
    await second.getByText('Back up the server, at once; stops the run if it fails').waitFor();
    await second.getByRole('button', { name: 'Delete task 2' }).click();
    await page
      .getByRole('dialog', { name: 'Delete task 2 of weekly backup?' })
      .getByRole('button', { name: 'Delete task' })
      .click();
    await expect.poll(() => second.count()).toBe(0);
    expect(await taskRows(panel.server, Number(row?.id))).toHaveLength(1);
    checkPage(problems);
    await context.close();
  });

  it('runs a schedule now: its backup appears, made automatically', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}/schedules`);
    const weekly = card(page, 'weekly backup');
    await weekly.getByText('Never', { exact: true }).waitFor();
    await screenshot(page, 'server-schedules');
    await weekly.getByRole('button', { name: 'Run now' }).click();
    await page.getByText('Started "weekly backup": its tasks run in the background.').waitFor();
    // The last run is told once it has started; the schedule stops running when its task is done.
    await expect.poll(() => weekly.getByText('Never', { exact: true }).count(), { timeout: 20_000 }).toBe(0);
    await expect
      .poll(() => weekly.getByText('Running', { exact: true }).count(), { timeout: 30_000 })
      .toBe(0);

    await page
      .getByRole('navigation', { name: 'Server sections' })
      .getByRole('link', { name: 'Backups' })
      .click();
    const made = page.locator('li.backup', { has: page.getByText('Automatic', { exact: true }) });
    await made.getByText(/ B, 1 file · sha256:/).waitFor({ timeout: 30_000 });
    const rows = await panel.server.app.db.kysely
      .selectFrom('backups')
      .select(['is_automatic', 'is_successful', 'ignored_files'])
      .where('server_id', '=', world.id)
      .execute();
    expect(rows.map((r) => [Number(r.is_automatic), Number(r.is_successful)])).toEqual([[1, 1]]);
    checkPage(problems);
    await context.close();
  });

  it('shows a subuser only the buttons their permissions allow', async () => {
    const viewer = await createUser(panel.server.app, { username: 'viewer', password: PASSWORD });
    await addSubuser(panel.server.app, world.id, viewer, ['schedule.read']);
    const { context, page, problems } = await panel.open();
    await logIn(page, 'viewer', PASSWORD, `/servers/${world.identifier}`);
    expect(
      await page.getByRole('navigation', { name: 'Server sections' }).getByRole('link').allTextContents(),
    ).toEqual(['Schedules']);
    const weekly = card(page, 'weekly backup');
    await weekly.getByText('Every Monday at 04:30').waitFor();
    for (const action of ['Create schedule', 'Run now', 'Edit', 'Delete', 'Add task'])
      expect(await page.getByRole('button', { name: action }).count(), action).toBe(0);

    // With schedule.update: run, change and tasks; still no create or delete.
    await addSubuser(panel.server.app, world.id, viewer, ['schedule.read', 'schedule.update']);
    await page.reload();
    await weekly.getByRole('button', { name: 'Run now' }).waitFor();
    await weekly.getByRole('button', { name: 'Edit schedule weekly backup' }).waitFor();
    await weekly.getByRole('button', { name: 'Add a task to weekly backup' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create schedule' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Delete schedule/ }).count()).toBe(0);

    // Without schedule.read, the tab is not there.
    await addSubuser(panel.server.app, world.id, viewer, ['backup.read']);
    await page.goto(`/servers/${world.identifier}/schedules`);
    await page.getByText('Your permissions on this server do not include this section.').waitFor();
    checkPage(problems);
    await context.close();
  });

  it('deletes a schedule behind a confirmation', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}/schedules`);
    const weekly = card(page, 'weekly backup');
    await weekly.getByRole('button', { name: 'Delete schedule weekly backup' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete weekly backup?' });
    await confirm
      .getByText('The schedule and its 1 task are deleted. The backups it made are kept.')
      .waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => confirm.count()).toBe(0);
    await weekly.getByRole('button', { name: 'Delete schedule weekly backup' }).click();
    await confirm.getByRole('button', { name: 'Delete schedule' }).click();
    await page.getByText('No schedules yet.').waitFor();
    expect(await scheduleRows(panel.server, world.id)).toEqual([]);
    checkPage(problems);
    await context.close();
  });
});

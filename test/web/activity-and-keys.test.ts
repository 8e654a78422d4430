/**
 * The activity feeds and the API keys page, in Chromium against a running Aerie: paging and
 * filtering with everything in the URL, entries' actor, times and properties, a key made with the
 * API's own validation shown at its fields, its secret shown once, and the keyboard alone.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { insertActivity, userSubject, type SeedEntry } from '../support/activity.ts';
import { createServer, createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel } from './browser.ts';

const PASSWORD = 'correct horse battery';
const EVENTS = ['auth:login', 'user:api-key.create', 'user:api-key.delete', 'auth:fail'];
const IPS = ['203.0.113.5', '198.51.100.7', '2001:db8::1'];

function focused(page: Page): Promise<string> {
  return page.evaluate(
    `(() => { const e = document.activeElement; return e === null ? '' : [e.tagName.toLowerCase(), e.getAttribute('name') ?? e.id, e.textContent.trim()].join('|'); })()`,
  );
}

/** The events shown, in order. */
function shownEvents(page: Page): Promise<string[]> {
  return attributes(page, 'li.entry', 'data-event');
}

/** One attribute of every element `selector` finds, in document order. */
function attributes(page: Page, selector: string, name: string): Promise<string[]> {
  return page.evaluate<string[]>(
    `[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => e.getAttribute(${JSON.stringify(name)}) ?? '')`,
  );
}

describe.runIf(RUN_BROWSER_TESTS)('activity feeds and API keys in the panel', () => {
  let owner: Awaited<ReturnType<typeof createUser>>;
  let world: Awaited<ReturnType<typeof createServer>>;
  const counts = new Map<string, number>();
  const panel = usePanel(async (server) => {
    owner = await createUser(server.app, { username: 'ada', password: PASSWORD });
    world = await createServer(server.app, owner, { name: 'Survival world' });
    const now = Date.now();
    const entries: SeedEntry[] = Array.from({ length: 60 }, (_, i) => {
      const event = EVENTS[i % EVENTS.length]!;
      counts.set(event, (counts.get(event) ?? 0) + 1);
      const failed = event === 'auth:fail';
      return {
        event,
        ip: IPS[i % IPS.length]!,
        actorId: failed ? null : owner.id,
        subjects: [userSubject(owner)],
        timestamp: new Date(now - (60 - i) * 7 * 60_000).toISOString(),
        // A failed login names the username given; a failed second factor of a lost checkpoint, none.
        properties: failed
          ? i % 8 === 7
            ? { username: null, two_factor: true }
            : { username: 'ada' }
          : { identifier: `ptlc_seed${String(i).padStart(6, '0')}` },
      };
    });
    // The one before last is Aerie's own doing: a backup found stopped, marked failed.
    const serverEntries: SeedEntry[] = Array.from({ length: 30 }, (_, i) => ({
      event: i === 28 ? 'server:backup.fail' : i % 2 === 0 ? 'server:backup.start' : 'server:backup.complete',
      ip: i === 28 ? null : '203.0.113.5',
      actorId: i === 28 ? null : owner.id,
      subjects: [{ type: 'server', id: world.id }],
      timestamp: new Date(now - (30 - i) * 60_000).toISOString(),
      properties: { name: `nightly-${i}` },
    }));
    await insertActivity(server.app, [...entries, ...serverEntries]);
  });

  it('pages through the account feed, with the page in the URL', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/activity');
    const status = page.locator('.page-status');
    // 60 seeded entries and this login.
    await status.getByText('Page 1 of 3 · 61 entries').waitFor();
    expect(await page.locator('li.entry').count()).toBe(25);
    const first = await page.locator('li.entry').first().textContent();

    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL('**/activity?page=2');
    await status.getByText('Page 2 of 3 · 61 entries').waitFor();
    expect(await page.locator('li.entry').first().textContent()).not.toBe(first);
    await page.reload();
    await status.getByText('Page 2 of 3 · 61 entries').waitFor();
    await page.getByRole('combobox', { name: 'Per page' }).selectOption('10');
    await page.waitForURL('**/activity?per_page=10');
    await status.getByText('Page 1 of 7 · 61 entries').waitFor();
    await page.goBack();
    await page.waitForURL('**/activity?page=2');
    await status.getByText('Page 2 of 3 · 61 entries').waitFor();
    checkPage(problems);
    await context.close();
  });

  it('filters on an event or an IP by clicking it, in a URL that can be shared', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/activity');
    await page.getByRole('button', { name: 'Event user:api-key.create: show only these' }).first().click();
    await page.waitForURL('**/activity?event=user%3Aapi-key.create');
    await page.locator('.page-status', { hasText: `${counts.get('user:api-key.create')} entries` }).waitFor();
    expect(new Set(await shownEvents(page))).toEqual(new Set(['user:api-key.create']));
    expect(await page.getByRole('textbox', { name: 'Event' }).inputValue()).toBe('user:api-key.create');

    await page.getByRole('button', { name: 'IP 198.51.100.7: show only entries from it' }).first().click();
    await page.waitForURL(/event=user%3Aapi-key\.create/);
    await page.waitForURL(/ip=198\.51\.100\.7/);
    const url = page.url();
    // Every fourth seeded entry is a key creation, and of those every third from this address.
    await expect
      .poll(() => page.locator('li.entry .chip-ip').allTextContents())
      .toEqual(Array(5).fill('198.51.100.7'));
    const shown = await page.locator('li.entry').count();
    expect(shown).toBe(5);
    expect(new Set(await shownEvents(page))).toEqual(new Set(['user:api-key.create']));

    // The same address in another browser shows the same entries.
    const other = await panel.open();
    await logIn(other.page, 'ada', PASSWORD, url.replace(panel.server.url, ''));
    await other.page.waitForURL(url);
    await expect.poll(() => other.page.locator('li.entry').count()).toBe(shown);
    expect(await other.page.getByRole('textbox', { name: 'IP address' }).inputValue()).toBe('198.51.100.7');
    await other.context.close();

    // Typed filters too, and a way back to everything.
    await page.getByRole('textbox', { name: 'Event' }).fill('AUTH:F');
    await page.getByRole('textbox', { name: 'IP address' }).fill('');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.waitForURL('**/activity?event=AUTH%3AF');
    await expect.poll(() => shownEvents(page)).toEqual(Array(counts.get('auth:fail')).fill('auth:fail'));
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.waitForURL('**/activity');
    await expect.poll(() => page.locator('.active-filters').count()).toBe(0);
    await page.locator('.page-status', { hasText: 'Page 1 of 3' }).waitFor();
    checkPage(problems);
    await context.close();
  });

  it('shows who did it, when (relative and exact) and, on demand, its properties', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/activity?event=user:api-key.create');
    const entry = page.locator('li.entry').first();
    await entry.waitFor();
    expect(await entry.locator('.entry-actor').textContent()).toBe('ada');
    const time = entry.locator('.entry-meta time');
    expect(await time.textContent()).toMatch(/minutes? ago|hours? ago/);
    const exact = await time.getAttribute('title');
    expect(exact).toMatch(/\d{4}/);
    expect(new Date((await time.getAttribute('datetime'))!).getTime()).toBeGreaterThan(
      Date.now() - 10 * 3600_000,
    );
    const details = entry.locator('details');
    expect(await details.locator('pre').isVisible()).toBe(false);
    await details.locator('summary').click();
    expect(await details.locator('pre').textContent()).toMatch(/"identifier": "ptlc_seed\d{6}"/);
    expect(await details.locator('dd time').textContent()).toBe(exact);

    // Failed logins have no actor: someone not logged in tried, giving a username or not (not
    // "System", as if Aerie had failed); their IPs are not the user's to see.
    await page.goto('/activity?event=auth:fail');
    const failed = page.locator('li.entry').first();
    await failed.waitFor();
    expect(await failed.locator('.entry-actor').textContent()).toBe('Someone (username “ada”)');
    expect(await failed.locator('.chip-ip').count()).toBe(0);
    await expect
      .poll(async () => new Set(await page.locator('li.entry .entry-actor').allTextContents()))
      .toEqual(new Set(['Someone (username “ada”)', 'Someone']));
    expect(await page.locator('li.entry', { hasText: 'System' }).count()).toBe(0);
    checkPage(problems);
    await context.close();
  });

  it("shows a server's own feed, filtered and paged the same way", async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${world.identifier}`);
    await page
      .getByRole('navigation', { name: 'Server sections' })
      .getByRole('link', { name: 'Activity' })
      .click();
    await page.waitForURL(`**/servers/${world.identifier}/activity`);
    await page.locator('.page-status', { hasText: 'Page 1 of 2 · 30 entries' }).waitFor();
    await page.getByRole('button', { name: 'Event server:backup.complete: show only these' }).first().click();
    await page.waitForURL(`**/servers/${world.identifier}/activity?event=server%3Abackup.complete`);
    await page.locator('.page-status', { hasText: 'Page 1 of 1 · 15 entries' }).waitFor();
    expect(new Set(await shownEvents(page))).toEqual(new Set(['server:backup.complete']));

    // What Aerie did of itself is the System's.
    await page.getByRole('textbox', { name: 'Event' }).fill('backup.fail');
    await page.getByRole('button', { name: 'Filter', exact: true }).click();
    await page.locator('.page-status', { hasText: 'Page 1 of 1 · 1 entry' }).waitFor();
    const failed = page.locator('li.entry[data-event="server:backup.fail"]');
    expect(await failed.locator('.entry-actor').textContent()).toBe('System');
    checkPage(problems);
    await context.close();
  });

  it('makes a key with the API checking its fields, and shows its secret only once', async () => {
    const { context, page, problems } = await panel.open();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: panel.server.url });
    await logIn(page, 'ada', PASSWORD, '/account/api-keys');
    await page.getByLabel('Description').fill('deploy script');
    await page.getByLabel('Allowed IPs').fill('127.0.0.1\n10.0.0.0/33\nnot-an-ip');
    await page.getByRole('button', { name: 'Create key' }).click();
    // The API's 422, at the field, naming the entries it refused.
    const error = page.locator('.field.invalid .field-error');
    await error.waitFor();
    expect(await error.textContent()).toBe(
      '“10.0.0.0/33” is not an IP address or a CIDR range. “not-an-ip” is not an IP address or a CIDR range.',
    );
    expect(await page.getByLabel('Allowed IPs').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Allowed IPs').fill('127.0.0.1\n203.0.113.0/24');
    await page.getByRole('button', { name: 'Create key' }).click();

    const secret = page.getByRole('region', { name: 'Your new API key' });
    const token = await secret.getByLabel('API key token').inputValue();
    expect(token).toMatch(/^ptlc_[A-Za-z0-9]{11}[A-Za-z0-9]{32}$/);
    const identifier = token.slice(0, 16);
    await page.locator(`tr[data-key="${identifier}"]`).getByText('127.0.0.1, 203.0.113.0/24').waitFor();
    await screenshot(page, 'api-key-created');
    await secret.getByRole('button', { name: 'Copy key' }).click();
    await secret.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(token);

    // The token works (from 127.0.0.1, one of its addresses).
    const account = await fetch(`${panel.server.url}/api/client/account`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(account.status).toBe(200);

    // Once: after a reload only the identifier is left.
    await page.reload();
    await page.locator(`tr[data-key="${identifier}"]`).waitFor();
    expect(await secret.count()).toBe(0);
    expect(await page.content()).not.toContain(token.slice(16));
    checkPage(problems);
    await context.close();
  });

  it('makes and deletes a key with the keyboard alone, the dialog keeping the focus', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/account/api-keys');
    await page.getByRole('heading', { name: 'Your keys' }).waitFor();
    expect(await focused(page)).toBe('h1||API keys');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('input|description|');
    await page.keyboard.type('keyboard key');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('textarea|allowed_ips|');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||Create key');
    await page.keyboard.press('Enter');
    // The secret takes the focus, then its copy button, then the way out.
    await expect.poll(() => focused(page)).toBe('input|new-key-token|');
    const token = await page.getByLabel('API key token').inputValue();
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||Copy key');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||I have saved it');
    await page.keyboard.press('Enter');
    expect(await page.getByRole('region', { name: 'Your new API key' }).count()).toBe(0);

    // To the new key's Delete button: after the form's three controls, the rows in order.
    const rows = await attributes(page, 'tr[data-key]', 'data-key');
    const index = rows.indexOf(token.slice(0, 16));
    expect(index).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 4 + index; i++) await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||Delete');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete this API key?' });
    await dialog.waitFor();
    expect(await focused(page)).toBe('button||Cancel');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||Delete key');
    // The focus stays in the dialog: on past the last control to the first, and back.
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('button||×');
    await page.keyboard.press('Shift+Tab');
    expect(await focused(page)).toBe('button||Delete key');
    // Escape closes it, and the focus goes back to where it was.
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    expect(await focused(page)).toBe('button||Delete');
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator(`tr[data-key="${token.slice(0, 16)}"]`).count()).toBe(0);
    const keys = await panel.server.app.db.kysely.selectFrom('api_keys').select('identifier').execute();
    expect(keys.map((key) => key.identifier)).not.toContain(token.slice(0, 16));
    checkPage(problems);
    await context.close();
  });
});

/**
 * The panel on a phone-sized screen and in dark mode, in Chromium against a running Aerie: no
 * page wider than the screen, the navigation behind its menu button, tables read as cards, the
 * system's colour scheme followed until the user picks one, and the pictures of the README.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { insertActivity, userSubject, type SeedEntry } from '../support/activity.ts';
import { addSubuser, createApiKey, createServer, createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel } from './browser.ts';

const PASSWORD = 'correct horse battery';
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

/** Whether the page scrolls sideways (it should not, at any width). */
function overflows(page: Page): Promise<boolean> {
  return page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth + 1');
}

function background(page: Page): Promise<string> {
  return page.evaluate('getComputedStyle(document.body).backgroundColor');
}

const LIGHT = 'rgb(246, 247, 249)';
const DARK = 'rgb(15, 17, 21)';

describe.runIf(RUN_BROWSER_TESTS)('the panel on phones and in dark mode', () => {
  let world: Awaited<ReturnType<typeof createServer>>;
  const panel = usePanel(async (server) => {
    const owner = await createUser(server.app, {
      username: 'ada',
      email: 'ada@example.com',
      password: PASSWORD,
      firstName: 'Ada',
    });
    const grace = await createUser(server.app, { username: 'grace', email: 'grace@example.com' });
    world = await createServer(server.app, owner, { name: 'Survival world' });
    await createServer(server.app, owner, { name: 'Creative build' });
    await createServer(server.app, owner, { name: 'Minigames lobby' });
    await addSubuser(server.app, world.id, grace, ['activity.read', 'backup.read', 'backup.download']);
    fs.writeFileSync(path.join(world.volume, 'server.properties'), 'motd=Welcome\n');
    fs.mkdirSync(path.join(world.volume, 'world'));
    fs.writeFileSync(path.join(world.volume, 'world/level.dat'), 'level'.repeat(20_000));
    await createApiKey(server.app, owner, { description: 'deploy script', allowedIps: ['203.0.113.0/24'] });
    await createApiKey(server.app, owner, { description: 'monitoring' });
    const now = Date.now();
    const story: [string, string | null, Record<string, unknown>][] = [
      ['auth:login', '203.0.113.5', {}],
      ['user:api-key.create', '203.0.113.5', { identifier: 'ptlc_Xb31kQz9RmA' }],
      ['server:backup.start', '203.0.113.5', { name: 'nightly' }],
      ['server:backup.complete', null, { name: 'nightly', bytes: 52_428_800 }],
      ['auth:fail', null, { username: 'ada' }],
      ['server:backup.restore', '198.51.100.7', { name: 'nightly', truncate: false }],
      ['server:backup.restore-complete', null, { name: 'nightly', files: 1204 }],
      ['server:subuser.create', '198.51.100.7', { email: 'grace@example.com' }],
      ['user:api-key.delete', '2001:db8::7', { identifier: 'ptlc_Lm0QvTn28Ws' }],
      ['auth:login', '2001:db8::7', {}],
    ];
    const entries: SeedEntry[] = Array.from({ length: 40 }, (_, i) => {
      const [event, ip, properties] = story[i % story.length]!;
      return {
        event,
        ip,
        actorId: ip === null ? null : owner.id,
        subjects: [userSubject(owner)],
        timestamp: new Date(now - (40 - i) * 23 * 60_000).toISOString(),
        properties,
      };
    });
    await insertActivity(server.app, entries);
  });

  it('shows every page without a script error or a blocked resource (and pictures them)', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/servers');
    await page.locator('tr[data-server]').first().waitFor();
    await screenshot(page, 'servers');
    const pages: [string, string, string | null][] = [
      ['/activity', 'li.entry', 'activity'],
      ['/account/api-keys', 'tr[data-key]', 'api-keys'],
      ['/account', 'dd[data-field="email"]', 'account'],
      [`/servers/${world.identifier}`, 'h2#backups-heading', null],
      [`/servers/${world.identifier}/activity`, '.page-status', 'server-activity'],
      [`/servers/${world.identifier}/users`, 'tr[data-subuser]', 'subusers'],
    ];
    for (const [url, ready, name] of pages) {
      await page.goto(url);
      await page.locator(ready).first().waitFor();
      if (name !== null) await screenshot(page, name);
    }
    // React's production build, whatever NODE_ENV the build ran under (vitest's is `test`).
    const script = await page.locator('script[type="module"]').getAttribute('src');
    const bundle = await (await context.request.get(script!)).text();
    expect(bundle.length).toBeGreaterThan(100_000);
    expect(bundle).not.toContain('jsxDEV');

    // The Content-Security-Policy holds in the browser: no inline script runs, no inline style applies.
    await page.evaluate(
      "const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; document.body.append(s); document.querySelector('h1').setAttribute('style', 'color: rgb(255, 0, 0)');",
    );
    expect(await page.evaluate('window.inlineRan === true')).toBe(false);
    expect(await page.evaluate("getComputedStyle(document.querySelector('h1')).color")).not.toBe(
      'rgb(255, 0, 0)',
    );
    await expect
      .poll(() => problems.filter((problem) => /Content Security Policy/.test(problem)).length)
      .toBe(2);
    problems.length = 0;

    // An address that is nobody's page, and a server that is not there.
    await page.goto('/nowhere');
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await page.goto('/servers/00000000');
    await page.getByRole('heading', { name: 'Server not found' }).waitFor();
    checkPage(problems);
    await context.close();
  });
  it('fits a phone: no sideways scrolling, the navigation behind a menu, tables as cards', async () => {
    const { context, page, problems } = await panel.open(PHONE);
    await page.goto('/login');
    expect(await overflows(page)).toBe(false);
    await logIn(page, 'ada', PASSWORD, '/servers');
    const menu = page.getByRole('button', { name: 'Menu' });
    expect(await menu.isVisible()).toBe(true);
    expect(
      await page
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Activity' })
        .isVisible(),
    ).toBe(false);
    expect(await page.locator('table.servers thead').isVisible()).toBe(false);
    expect(await page.locator('tr[data-server] td[data-label="Status"]').first().isVisible()).toBe(true);
    expect(await overflows(page)).toBe(false);
    await screenshot(page, 'phone-servers');

    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Activity' }).click();
    await page.waitForURL('**/activity');
    await page.locator('li.entry').first().waitFor();
    expect(await overflows(page)).toBe(false);
    await screenshot(page, 'phone-activity');

    for (const url of [
      '/account/api-keys',
      '/account',
      `/servers/${world.identifier}`,
      `/servers/${world.identifier}/users`,
    ]) {
      await page.goto(url);
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await overflows(page), url).toBe(false);
    }
    checkPage(problems);
    await context.close();
  });

  it('follows the system colour scheme until the user picks one, and keeps that choice', async () => {
    const dark = await panel.open({ colorScheme: 'dark' });
    await logIn(dark.page, 'ada', PASSWORD, '/activity');
    expect(await background(dark.page)).toBe(DARK);
    await dark.page.locator('li.entry').first().waitFor();
    await screenshot(dark.page, 'dark-activity');
    const toggle = dark.page.getByRole('button', { name: /Dark mode/ });
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    await toggle.click();
    await expect.poll(() => background(dark.page)).toBe(LIGHT);
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    await dark.page.reload();
    await dark.page.locator('li.entry').first().waitFor();
    expect(await background(dark.page)).toBe(LIGHT);
    checkPage(dark.problems);
    await dark.context.close();

    const light = await panel.open({ colorScheme: 'light' });
    await logIn(light.page, 'ada', PASSWORD, '/servers');
    expect(await background(light.page)).toBe(LIGHT);
    await light.page.getByRole('button', { name: /Dark mode/ }).click();
    await expect.poll(() => background(light.page)).toBe(DARK);
    // The login page too, after a reload.
    await light.page.getByRole('button', { name: 'Log out' }).click();
    await light.page.waitForURL('**/login');
    await light.page.reload();
    expect(await background(light.page)).toBe(DARK);
    checkPage(light.problems);
    await light.context.close();
  });
});

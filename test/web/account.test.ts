/**
 * Logging in and out, and the account page, in Chromium against a running Aerie: failed logins
 * that say nothing of whether the account exists, a session that ends under the user's feet,
 * the keyboard alone, a new password and email, and two-factor authentication from set-up to
 * logging in with a code and with a recovery token.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { base32Decode, totpCode } from '../../src/auth/totp.ts';
import { createUser } from '../support/harness.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, screenshot, usePanel } from './browser.ts';

const PASSWORD = 'correct horse battery';

/** The element that has focus, described: tag, name and accessible label. */
function focused(page: Page): Promise<string> {
  return page.evaluate(
    `(() => { const e = document.activeElement; return e === null ? '' : [e.tagName.toLowerCase(), e.getAttribute('name') ?? '', e.textContent.trim()].join('|'); })()`,
  );
}

async function submitLogin(page: Page, user: string, password: string): Promise<void> {
  await page.getByLabel('Username or email').fill(user);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

describe.runIf(RUN_BROWSER_TESTS)('logging in and the account page', () => {
  const panel = usePanel();

  it('refuses an unknown account and a wrong password alike, then logs in and out', async () => {
    await createUser(panel.server.app, { username: 'ada', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    await page.goto('/activity');
    // Not logged in: the login page, which remembers where the user was going.
    await page.waitForURL('**/login?next=%2Factivity');
    expect(await page.getByText('Your session has ended').count()).toBe(0);
    await screenshot(page, 'login');

    const failures = async () =>
      (
        await panel.server.app.db.kysely
          .selectFrom('activity_logs')
          .select('id')
          .where('event', '=', 'auth:fail')
          .execute()
      ).length;
    await submitLogin(page, 'nobody', PASSWORD);
    await expect.poll(failures).toBe(1);
    const refusal = await page.getByRole('alert').textContent();
    await submitLogin(page, 'ada', 'wrong password');
    await expect.poll(failures).toBe(2);
    // The same words whether the account exists or not.
    expect(await page.getByRole('alert').textContent()).toBe(refusal);
    expect(refusal).toBe('Those credentials do not match an account. Check them and try again.');

    await submitLogin(page, 'ada@example.com', PASSWORD);
    await page.waitForURL('**/activity');
    await page.getByRole('heading', { name: 'Activity', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login');
    // The session is over on the server too.
    expect((await context.request.get('/api/client/account')).status()).toBe(401);
    checkPage(problems);
    await context.close();
  });

  it('returns to the login page when the session ends, and back where it was after logging in', async () => {
    await createUser(panel.server.app, { username: 'lin', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'lin', PASSWORD, '/servers');
    // The page's own requests first: one still in flight when the session ends would meet the
    // end itself, and send the browser to the login page with `next` set to /servers.
    await page.waitForLoadState('networkidle');
    await panel.server.app.db.kysely.deleteFrom('sessions').execute();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL('**/login?next=%2Faccount%2Fapi-keys&expired=1');
    await page.getByText('Your session has ended. Log in again to continue.').waitFor();
    await submitLogin(page, 'lin', PASSWORD);
    await page.waitForURL('**/account/api-keys');
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    checkPage(problems);
    await context.close();
  });

  it('logs in with the keyboard alone, and shows where the focus is', async () => {
    await createUser(panel.server.app, { username: 'kim', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    await page.goto('/login');
    // The username field has the focus at once.
    expect(await focused(page)).toBe('input|user|');
    await page.keyboard.type('kim');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('input|password|');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();

    // From the top of the page: the skip link first, then the navigation.
    await page.evaluate('document.activeElement.blur()');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('a||Skip to content');
    await page.keyboard.press('Enter');
    expect(await focused(page)).toMatch(/^main\|/);
    await page.evaluate('document.activeElement.blur()');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toMatch(/Aerie$/);
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('a||Activity');
    await page.keyboard.press('Enter');
    await page.waitForURL('**/activity');
    // The new page's heading takes the focus.
    expect(await focused(page)).toBe('h1||Activity');
    checkPage(problems);
    await context.close();
  });

  it('changes the password and the email', async () => {
    await createUser(panel.server.app, { username: 'mo', email: 'mo@example.com', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'mo', PASSWORD, '/account');
    const form = page.locator('form', { has: page.getByRole('heading', { name: 'Change password' }) });
    await form.getByLabel('Current password').fill('not my password');
    await form.getByLabel('New password', { exact: true }).fill('a much better password');
    await form.getByLabel('Confirm new password').fill('a much better password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').waitFor();
    await form.getByLabel('Current password').fill(PASSWORD);
    await form.getByLabel('Confirm new password').fill('a different password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByText('The two new passwords differ.').waitFor();
    await form.getByLabel('Confirm new password').fill('a much better password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password is changed.').waitFor();
    expect(await form.getByLabel('Current password').inputValue()).toBe('');

    const email = page.locator('form', { has: page.getByRole('heading', { name: 'Change email' }) });
    await email.getByLabel('New email address').fill('mo@example.org');
    await email.getByLabel('Current password').fill('a much better password');
    await email.getByRole('button', { name: 'Change email' }).click();
    await page.getByText('Your email address is changed.').waitFor();
    await page.locator('dd[data-field="email"]', { hasText: 'mo@example.org' }).waitFor();

    // The old password no longer works; the new one does.
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login');
    await submitLogin(page, 'mo', PASSWORD);
    await page.getByRole('alert').waitFor();
    await submitLogin(page, 'mo@example.org', 'a much better password');
    await page.getByRole('button', { name: 'Log out' }).waitFor();
    checkPage(problems);
    await context.close();
  });

  it('sets up two-factor authentication and logs in with a code, then with a recovery token', async () => {
    await createUser(panel.server.app, { username: 'tess', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    await logIn(page, 'tess', PASSWORD, '/account');
    const section = page.locator('section', {
      has: page.getByRole('heading', { name: 'Two-factor authentication' }),
    });
    await section.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const qr = section.getByRole('img', { name: /QR code/ });
    await qr.waitFor();
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    // The image decoded (the Content-Security-Policy lets data: images through).
    await expect
      .poll(() => qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
      .toBeGreaterThan(0);
    const secret = (await section.locator('[data-secret]').textContent()) ?? '';
    const key = base32Decode(secret);
    expect(key).not.toBeNull();
    await screenshot(page, 'two-factor');

    // A wrong code is refused; then the previous step's code (the next login takes the current one).
    await section.getByLabel('Authentication code').fill('000000');
    await section.getByLabel('Password').fill(PASSWORD);
    await section.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await section.getByRole('alert').waitFor();
    await section.getByLabel('Authentication code').fill(totpCode(key!, new Date(Date.now() - 30_000)));
    await section.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    const tokens = section.getByRole('region', { name: 'Your recovery tokens' }).getByRole('listitem');
    await tokens.first().waitFor();
    const recovery = await tokens.allTextContents();
    expect(recovery.length).toBeGreaterThan(0);
    await section.getByRole('button', { name: 'I have saved them' }).click();
    // Shown once: gone, and not to be had again.
    expect(await page.content()).not.toContain(recovery[0]);
    await page.locator('dd', { hasText: 'On' }).first().waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login');
    await submitLogin(page, 'tess', PASSWORD);
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByLabel('Authentication code').fill('123456');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('That code is not valid.', { exact: false }).waitFor();
    await page.getByLabel('Authentication code').fill(totpCode(key!, new Date()));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await submitLogin(page, 'tess', PASSWORD);
    await page.getByRole('button', { name: 'Use a recovery token instead' }).click();
    await page.getByLabel('Recovery token').fill(recovery[0]!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();

    // And off again, with the password.
    await page.goto('/account');
    await section.getByLabel('Password').fill(PASSWORD);
    await section.getByRole('button', { name: 'Turn off two-factor authentication' }).click();
    await section.getByRole('button', { name: 'Set up two-factor authentication' }).waitFor();
    checkPage(problems);
    await context.close();
  });

  it('says a code already used is used, a wrong one wrong, and asks for the password before sending', async () => {
    await createUser(panel.server.app, { username: 'uma', password: PASSWORD });
    const { context, page, problems } = await panel.open();
    const posts: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST') posts.push(new URL(request.url()).pathname);
    });
    await logIn(page, 'uma', PASSWORD, '/account');
    const section = page.locator('section', {
      has: page.getByRole('heading', { name: 'Two-factor authentication' }),
    });
    await section.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const key = base32Decode((await section.locator('[data-secret]').textContent()) ?? '');
    expect(key).not.toBeNull();

    // Nothing typed: the panel asks for both, and sends nothing.
    await section.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await section.getByText('The authentication code field is required.').waitFor();
    await section.getByText('The password field is required.').waitFor();
    // The code alone: the password is still asked for.
    await section.getByLabel('Authentication code').fill(totpCode(key!, new Date(Date.now() - 30_000)));
    await section.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await section.getByText('The password field is required.').waitFor();
    expect(await section.getByText('The authentication code field is required.').count()).toBe(0);
    expect(posts.filter((p) => p === '/api/client/account/two-factor')).toEqual([]);
    await section.getByLabel('Password').fill(PASSWORD);
    await section.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    const tokens = section.getByRole('region', { name: 'Your recovery tokens' }).getByRole('listitem');
    await tokens.first().waitFor();
    const recovery = await tokens.allTextContents();
    await section.getByRole('button', { name: 'I have saved them' }).click();

    // A code logs in once; the same code again is said to be used, not wrong.
    const code = totpCode(key!, new Date());
    const checkpoint = async (value: string) => {
      await page.getByLabel('Authentication code').fill(value);
      await page.getByRole('button', { name: 'Continue' }).click();
    };
    await page.getByRole('button', { name: 'Log out' }).click();
    await submitLogin(page, 'uma', PASSWORD);
    await checkpoint(code);
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await submitLogin(page, 'uma', PASSWORD);
    await checkpoint(code);
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'already used' }).waitFor();
    expect(await alert.textContent()).toBe(
      'That code was already used. Wait for the next one from your authenticator app.',
    );
    // A wrong code is still wrong, in the words it always had.
    await checkpoint(String((Number(code) + 1) % 1_000_000).padStart(6, '0'));
    await alert.filter({ hasText: 'That code is not valid.' }).waitFor();
    expect(await alert.textContent()).toBe('That code is not valid. Enter the current one.');

    // In with a recovery token; turning 2FA off asks for the password before sending too.
    await page.getByRole('button', { name: 'Use a recovery token instead' }).click();
    await page.getByLabel('Recovery token').fill(recovery[0]!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await page.goto('/account');
    await section.getByRole('button', { name: 'Turn off two-factor authentication' }).click();
    await section.getByText('The password field is required.').waitFor();
    expect(posts.filter((p) => p === '/api/client/account/two-factor/disable')).toEqual([]);
    await section.getByLabel('Password').fill(PASSWORD);
    await section.getByRole('button', { name: 'Turn off two-factor authentication' }).click();
    await section.getByRole('button', { name: 'Set up two-factor authentication' }).waitFor();
    expect(posts.filter((p) => p === '/api/client/account/two-factor/disable')).toHaveLength(1);
    checkPage(problems);
    await context.close();
  });
});

/**
 * Every form of the panel checks its required fields before it sends anything: a field left
 * empty (or blank, where the value is trimmed) says "The … field is required." next to itself,
 * marked `aria-invalid` and tied to its input by `aria-describedby`, the focus goes to the first
 * such field, and no request leaves the page. Fields that are not required are not marked so, and
 * a form with none sends at once.
 */
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { addSubuser, createApiKey, createServer, createUser } from '../support/harness.ts';
import { codeAt, enableTwoFactor } from '../support/two-factor.ts';
import { checkPage, logIn, RUN_BROWSER_TESTS, usePanel } from './browser.ts';

const PASSWORD = 'correct horse battery';

/** Every request the page sends that is not a GET, as `METHOD /path`, from now on. */
function sendsOf(page: Page): string[] {
  const sent: string[] = [];
  page.on('request', (request) => {
    if (request.method() !== 'GET') sent.push(`${request.method()} ${new URL(request.url()).pathname}`);
  });
  return sent;
}

/** The texts of what an input is described by (its hint and its error). */
async function descriptionsOf(input: Locator): Promise<string[]> {
  const ids = (await input.getAttribute('aria-describedby'))?.split(' ') ?? [];
  const page = input.page();
  return Promise.all(ids.map(async (id) => (await page.locator(`[id="${id}"]`).textContent()) ?? ''));
}

/** The input is required, and says `message` as its error, tied to it for assistive technology. */
async function expectMissing(input: Locator, message: string): Promise<void> {
  await expect.poll(() => input.getAttribute('aria-invalid')).toBe('true');
  expect(await input.getAttribute('required')).not.toBeNull();
  expect(await descriptionsOf(input)).toContain(message);
  // Next to the field, where it is seen.
  expect(await input.locator('xpath=..').locator('.field-error').textContent()).toBe(message);
}

/** The input is not (or no longer) marked invalid. */
async function expectFine(input: Locator): Promise<void> {
  await expect.poll(() => input.getAttribute('aria-invalid')).toBeNull();
  expect(await input.locator('xpath=..').locator('.field-error').count()).toBe(0);
}

/** The name of the element that has the focus. */
function focusedName(page: Page): Promise<unknown> {
  return page.evaluate('document.activeElement?.getAttribute("name") ?? null');
}

describe.runIf(RUN_BROWSER_TESTS)('the required fields of every form', () => {
  let serverIdentifier = '';
  let tessSecret = '';
  const panel = usePanel(async (server) => {
    const ada = await createUser(server.app, { username: 'ada', password: PASSWORD });
    const world = await createServer(server.app, ada, { name: 'World' });
    serverIdentifier = world.identifier;
    const grace = await createUser(server.app, { username: 'grace', email: 'grace@example.com' });
    await addSubuser(server.app, world.id, grace, ['backup.read']);
    // Two-factor authentication on, with a code of the step before, so that now's code is unused.
    const tess = await createUser(server.app, { username: 'tess', password: PASSWORD });
    const { token } = await createApiKey(server.app, tess);
    ({ secret: tessSecret } = await enableTwoFactor(
      server.app,
      token,
      PASSWORD,
      new Date(Date.now() - 30_000),
    ));
  });

  it('logging in: the username or email and the password, then the code or the recovery token', async () => {
    const { context, page, problems } = await panel.open();
    const sent = sendsOf(page);
    await page.goto('/login');
    const user = page.getByLabel('Username or email');
    const password = page.getByLabel('Password', { exact: true });
    const logInButton = page.getByRole('button', { name: 'Log in' });

    await logInButton.click();
    await expectMissing(user, 'The username or email field is required.');
    await expectMissing(password, 'The password field is required.');
    expect(await focusedName(page)).toBe('user');
    // Blank is empty: the username is sent trimmed.
    await user.fill('   ');
    await password.fill(PASSWORD);
    await logInButton.click();
    await expectMissing(user, 'The username or email field is required.');
    await expectFine(password);
    expect(sent).toEqual([]);

    await user.fill('tess');
    await logInButton.click();
    const code = page.getByLabel('Authentication code');
    await code.waitFor();
    expect(sent).toEqual(['POST /auth/login']);
    await page.getByRole('button', { name: 'Continue' }).click();
    await expectMissing(code, 'The authentication code field is required.');
    await page.getByRole('button', { name: 'Use a recovery token instead' }).click();
    const token = page.getByLabel('Recovery token');
    // Switching asks afresh: nothing is marked until the next try.
    await expectFine(token);
    await token.fill('  ');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expectMissing(token, 'The recovery token field is required.');
    expect(sent).toEqual(['POST /auth/login']);

    await page.getByRole('button', { name: 'Use an authentication code instead' }).click();
    await page.getByLabel('Authentication code').fill(codeAt(tessSecret, new Date()));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Log out' }).waitFor();
    expect(sent).toEqual(['POST /auth/login', 'POST /auth/login/checkpoint']);
    checkPage(problems);
    await context.close();
  });

  it('the account page: a new email, a new password, two-factor authentication', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/account');
    const sent = sendsOf(page);

    const email = page.locator('form', { has: page.getByRole('heading', { name: 'Change email' }) });
    await email.getByRole('button', { name: 'Change email' }).click();
    await expectMissing(email.getByLabel('New email address'), 'The new email address field is required.');
    await expectMissing(email.getByLabel('Current password'), 'The current password field is required.');
    expect(await focusedName(page)).toBe('email');
    await email.getByLabel('New email address').fill('ada@example.org');
    await email.getByRole('button', { name: 'Change email' }).click();
    await expectFine(email.getByLabel('New email address'));
    await expectMissing(email.getByLabel('Current password'), 'The current password field is required.');
    expect(await focusedName(page)).toBe('password');

    const change = page.locator('form', { has: page.getByRole('heading', { name: 'Change password' }) });
    const current = change.getByLabel('Current password');
    const fresh = change.getByLabel('New password', { exact: true });
    const again = change.getByLabel('Confirm new password');
    await change.getByRole('button', { name: 'Change password' }).click();
    await expectMissing(current, 'The current password field is required.');
    await expectMissing(fresh, 'The new password field is required.');
    await expectMissing(again, 'The new password confirmation field is required.');
    await current.fill(PASSWORD);
    await fresh.fill('a much better password');
    await change.getByRole('button', { name: 'Change password' }).click();
    await expectFine(current);
    await expectFine(fresh);
    await expectMissing(again, 'The new password confirmation field is required.');
    expect(sent).toEqual([]);

    const twoFactor = page.locator('section', {
      has: page.getByRole('heading', { name: 'Two-factor authentication' }),
    });
    await twoFactor.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    await twoFactor.getByRole('button', { name: 'Turn on two-factor authentication' }).click();
    await expectMissing(
      twoFactor.getByLabel('Authentication code'),
      'The authentication code field is required.',
    );
    await expectMissing(twoFactor.getByLabel('Password'), 'The password field is required.');
    expect(sent).toEqual([]);
    checkPage(problems);
    await context.close();
  });

  it('turning two-factor authentication off asks for the password', async () => {
    const { context, page, problems } = await panel.open();
    await page.goto('/login?next=%2Faccount');
    await page.getByLabel('Username or email').fill('tess');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    // The code of the step after now: no test has used it yet.
    await page.getByLabel('Authentication code').fill(codeAt(tessSecret, new Date(), 1));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    const sent = sendsOf(page);
    const twoFactor = page.locator('section', {
      has: page.getByRole('heading', { name: 'Two-factor authentication' }),
    });
    await twoFactor.getByRole('button', { name: 'Turn off two-factor authentication' }).click();
    await expectMissing(twoFactor.getByLabel('Password'), 'The password field is required.');
    expect(sent).toEqual([]);
    checkPage(problems);
    await context.close();
  });

  it('a subuser is added by email; permissions are never required', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, `/servers/${serverIdentifier}/users`);
    const sent = sendsOf(page);
    await page.getByRole('button', { name: 'Add subuser' }).click();
    const add = page.getByRole('dialog', { name: 'Add a subuser' });
    await add.getByRole('button', { name: 'Add subuser' }).click();
    await expectMissing(add.getByLabel('Email address'), 'The email address field is required.');
    await add.getByLabel('Email address').fill('  ');
    await add.getByRole('button', { name: 'Add subuser' }).click();
    await expectMissing(add.getByLabel('Email address'), 'The email address field is required.');
    expect(sent).toEqual([]);
    await add.getByRole('button', { name: 'Cancel' }).click();

    // Editing names nobody new: with every permission taken away it is still sent.
    await page.getByRole('button', { name: 'Edit permissions of grace' }).click();
    const edit = page.getByRole('dialog', { name: 'Permissions of grace' });
    await edit.getByLabel(/See backups/).uncheck();
    await edit.getByRole('button', { name: 'Save permissions' }).click();
    await expect.poll(() => edit.count()).toBe(0);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^POST \/api\/client\/servers\/[^/]+\/users\/[0-9a-f-]{36}$/);
    checkPage(problems);
    await context.close();
  });

  it('an API key needs nothing: its description and addresses are optional', async () => {
    const { context, page, problems } = await panel.open();
    await logIn(page, 'ada', PASSWORD, '/account/api-keys');
    const sent = sendsOf(page);
    const form = page.locator('form', { has: page.getByRole('heading', { name: 'Create an API key' }) });
    for (const label of ['Description', 'Allowed IPs'])
      expect(await form.getByLabel(label).getAttribute('required')).toBeNull();
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('region', { name: 'Your new API key' }).waitFor();
    expect(sent).toEqual(['POST /api/client/account/api-keys']);
    checkPage(problems);
    await context.close();
  });
});

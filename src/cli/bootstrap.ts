import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { Services } from '../services.ts';

/** Where the first administrator's credentials go: a person at a terminal, or a file. */
export interface BootstrapOutput {
  /** The data directory, which holds the credentials file when `out` is not a terminal. */
  dataDir: string;
  /** Where the web panel is reached, ending in `/` (see `panelUrl`): shown with the credentials. */
  panelUrl: string;
  /** The process's stdout. */
  out: { isTTY?: boolean; write(text: string): unknown };
}

/** Addresses that mean "every interface": a browser on this machine reaches them as `localhost`. */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0', '::0']);

/**
 * Where a person opens the panel of a `serve` listening on `host` and `port`: AERIE_PUBLIC_URL
 * when it is set (`publicUrl`, as the configuration holds it: no trailing slash), otherwise
 * `http://host:port/`, with an address of every interface shown as `localhost`.
 */
export function panelUrl(publicUrl: string | null, host: string, port: number): string {
  if (publicUrl !== null) return `${publicUrl}/`;
  const trimmed = host.trim();
  const name = WILDCARD_HOSTS.has(trimmed) ? 'localhost' : net.isIPv6(trimmed) ? `[${trimmed}]` : trimmed;
  // Port 0 lets the system pick one, which is only known once listening.
  return `http://${name}:${port === 0 ? '<port>' : port}/`;
}

/** The file, under the data directory, that holds the first administrator's credentials. */
export const CREDENTIALS_FILE = 'first-administrator.txt';

/** The first administrator's username: unique, so that only one process can ever create it. */
const FIRST_ADMINISTRATOR = 'admin';
/** Its email address, a placeholder its owner is told to change. */
const FIRST_ADMINISTRATOR_EMAIL = 'admin@example.com';

/**
 * On the first start against an empty database: an administrator and an API key, shown once
 * with the panel's address, the account's email, and how to change them (the panel's Account
 * page, or the `aerie user` and `aerie key` commands). On a terminal they are printed. Otherwise stdout is a log stream (a service manager's journal,
 * a container's log) that others read and keep, so they go into a file only this user can read,
 * `<data dir>/first-administrator.txt` (mode 0600), and only its path is printed.
 *
 * Several processes of a deployment may start at once on the empty database: each sees no user
 * and tries. The username's unique constraint lets exactly one create the account; the others
 * find it made and carry on, showing and writing nothing. Each writes into a scratch file of its
 * own, and only the one that made the account moves it into place, so two processes sharing the
 * data directory never overwrite or delete each other's file.
 * Returns whether this process created them.
 */
export async function bootstrapAdministrator(services: Services, output: BootstrapOutput): Promise<boolean> {
  if ((await services.users.count()) > 0) return false;
  const toTerminal = output.out.isTTY === true;
  // Opened before the account exists: if the file cannot be written, no account is made whose
  // password nobody will ever see.
  const file = toTerminal ? null : await openScratchFile(output.dataDir);
  try {
    const created = await createFirstAdministrator(services);
    if (created === null) return false;
    const { user, password } = created;
    const { token } = await services.apiKeys.create(
      { batch: randomUUID(), ip: null, userAgent: 'aerie', actor: { user, apiKeyId: null, sessionId: null } },
      { description: 'Created at first start', allowed_ips: [] },
    );
    const credentials = [
      `  panel:    ${output.panelUrl}`,
      `  username: ${user.username}`,
      `  email:    ${user.email}`,
      `  password: ${password}`,
      `  API key:  ${token}`,
      '',
      ...howToChange(output.panelUrl),
    ];
    if (file === null) {
      output.out.write(
        [
          '',
          'Aerie created its first administrator. This is shown once; keep it somewhere safe.',
          ...credentials,
          '',
          '',
        ].join('\n'),
      );
      return true;
    }
    await file.handle.writeFile(
      [
        'Aerie created this first administrator. Keep these somewhere safe, then delete this file.',
        ...credentials,
        '',
      ].join('\n'),
    );
    await file.handle.sync();
    // In one step, over whatever an earlier installation left there (a link included, which is
    // replaced, never followed).
    const target = path.join(output.dataDir, CREDENTIALS_FILE);
    await fs.rename(file.path, target);
    output.out.write(
      `Aerie created its first administrator. Its username, password and API key are in ${target} (readable by this user only); keep them somewhere safe, then delete the file. The panel is at ${output.panelUrl}\n`,
    );
    return true;
  } finally {
    await file?.handle.close();
    // Gone already when it was moved into place; left only by a process that made no account.
    if (file !== null) await fs.rm(file.path, { force: true });
  }
}

/**
 * What to do next with the generated account, and where: only what the panel and the `aerie`
 * command line really offer (the Account page changes the email and the password; the API keys
 * page deletes keys; `aerie user create` and `aerie key create` make new ones).
 */
function howToChange(panel: string): string[] {
  return [
    `The email is a placeholder (${FIRST_ADMINISTRATOR_EMAIL}). To change the email and the password,`,
    `log in to the panel and open Account: ${panel}account`,
    `The API keys page (${panel}account/api-keys) deletes this key and makes others.`,
    'Or, on the command line, make an administrator of your own (its password is printed):',
    '  aerie user create --username NAME --email EMAIL --admin',
    '  aerie key create --user NAME',
  ];
}

/**
 * Creates the first administrator, or returns null when another process got there first: its
 * account then exists, and this one's attempt failed on the unique username (or on the check
 * before it). Any other failure, with no user in the database, is thrown.
 */
async function createFirstAdministrator(
  services: Services,
): Promise<Awaited<ReturnType<Services['users']['create']>> | null> {
  try {
    return await services.users.create({
      username: FIRST_ADMINISTRATOR,
      email: FIRST_ADMINISTRATOR_EMAIL,
      firstName: 'Administrator',
      admin: true,
    });
  } catch (error) {
    if ((await services.users.findByLogin(FIRST_ADMINISTRATOR).catch(() => undefined)) !== undefined)
      return null;
    throw error;
  }
}

/**
 * A new file of this process's own beside the credentials file, mode 0600, created exclusively
 * (never through a link someone left in its place).
 */
async function openScratchFile(dataDir: string): Promise<{ path: string; handle: fs.FileHandle }> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, `.${CREDENTIALS_FILE}.${process.pid}-${randomBytes(4).toString('hex')}`);
  const handle = await fs.open(file, 'wx', 0o600);
  await handle.chmod(0o600);
  return { path: file, handle };
}

import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Services } from '../services.ts';

/** Where the first administrator's credentials go: a person at a terminal, or a file. */
export interface BootstrapOutput {
  /** The data directory, which holds the credentials file when `out` is not a terminal. */
  dataDir: string;
  /** The process's stdout. */
  out: { isTTY?: boolean; write(text: string): unknown };
}

/** The file, under the data directory, that holds the first administrator's credentials. */
export const CREDENTIALS_FILE = 'first-administrator.txt';

/** The first administrator's username: unique, so that only one process can ever create it. */
const FIRST_ADMINISTRATOR = 'admin';

/**
 * On the first start against an empty database: an administrator and an API key, shown once.
 * On a terminal they are printed. Otherwise stdout is a log stream (a service manager's journal,
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
    const credentials = [`  username: ${user.username}`, `  password: ${password}`, `  API key:  ${token}`];
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
      `Aerie created its first administrator. Its username, password and API key are in ${target} (readable by this user only); keep them somewhere safe, then delete the file.\n`,
    );
    return true;
  } finally {
    await file?.handle.close();
    // Gone already when it was moved into place; left only by a process that made no account.
    if (file !== null) await fs.rm(file.path, { force: true });
  }
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
      email: 'admin@example.com',
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

import { randomUUID } from 'node:crypto';
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

/**
 * On the first start against an empty database: an administrator and an API key, shown once.
 * On a terminal they are printed. Otherwise stdout is a log stream (a service manager's journal,
 * a container's log) that others read and keep, so they go into a file only this user can read,
 * `<data dir>/first-administrator.txt` (mode 0600), and only its path is printed.
 * Returns whether it created them.
 */
export async function bootstrapAdministrator(services: Services, output: BootstrapOutput): Promise<boolean> {
  if ((await services.users.count()) > 0) return false;
  const toTerminal = output.out.isTTY === true;
  // Opened before the account exists: if the file cannot be written, no account is made whose
  // password nobody will ever see.
  const file = toTerminal ? null : await openCredentialsFile(output.dataDir);
  try {
    const { user, password } = await services.users.create({
      username: 'admin',
      email: 'admin@example.com',
      firstName: 'Administrator',
      admin: true,
    });
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
    output.out.write(
      `Aerie created its first administrator. Its username, password and API key are in ${file.path} (readable by this user only); keep them somewhere safe, then delete the file.\n`,
    );
    return true;
  } catch (error) {
    if (file !== null) await fs.rm(file.path, { force: true });
    throw error;
  } finally {
    await file?.handle.close();
  }
}

/** Creates the credentials file afresh, mode 0600, never through a link someone left in its place. */
async function openCredentialsFile(dataDir: string): Promise<{ path: string; handle: fs.FileHandle }> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, CREDENTIALS_FILE);
  await fs.rm(file, { force: true });
  const handle = await fs.open(file, 'wx', 0o600);
  await handle.chmod(0o600);
  return { path: file, handle };
}

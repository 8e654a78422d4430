import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { buildApp, type App } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import type { Db } from '../../src/db/connection.ts';
import { openRuntime } from '../../src/runtime.ts';
import type { Actor, AuthenticatedContext } from '../../src/users/actor.ts';
import type { Clock } from '../../src/shared/time.ts';
import type { User } from '../../src/users/user.ts';
import { testDatabase } from './databases.ts';

export interface TestApp extends App {
  config: Config;
  db: Db;
  dataDir: string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /**
   * A database to use (another app's, say) instead of a fresh one of the suite's kind (see
   * TEST_DATABASE). The app does not drop it on close: whoever made it does.
   */
  databaseUrl?: string;
  clock?: Clock;
  /** The logger the HTTP app logs to, in place of the runtime's (to read what it writes). */
  logger?: Logger;
}

/**
 * A whole Aerie on a fresh database in a temporary data directory, built as `aerie serve` builds
 * it: `openRuntime`, then `buildApp`. The database is a new SQLite file, or a scratch database on
 * the server AERIE_TEST_DATABASE_URL names (dropped on close). It logs nothing unless `env` sets
 * LOG_LEVEL (or AERIE_TEST_LOG_LEVEL is set).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-test-'));
  const database = options.databaseUrl === undefined ? await testDatabase(dataDir) : undefined;
  const dropDatabase = async () => {
    await database?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const config = loadConfig({
    AERIE_DATA_DIR: dataDir,
    DATABASE_URL: options.databaseUrl ?? database!.url,
    AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES: '0',
    AERIE_RATE_LIMIT_PER_MINUTE: '0',
    // AERIE_TEST_LOG_LEVEL=error shows, say, what lies behind a 500 a test got.
    LOG_LEVEL: process.env.AERIE_TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  const runtime = await openRuntime(config, options.clock ? { clock: options.clock } : {}).catch(
    async (error: unknown) => {
      await dropDatabase();
      throw error;
    },
  );
  const app = await buildApp(options.logger ? { ...runtime, logger: options.logger } : runtime).catch(
    async (error: unknown) => {
      await runtime.close();
      await dropDatabase();
      throw error;
    },
  );
  return {
    ...app,
    config,
    db: runtime.db,
    dataDir,
    async close() {
      await app.http.close();
      await runtime.close();
      await dropDatabase();
    },
  };
}

let sequence = 0;

export async function createUser(
  app: App,
  overrides: {
    username?: string;
    email?: string;
    password?: string;
    admin?: boolean;
    firstName?: string;
  } = {},
): Promise<User & { password: string }> {
  sequence += 1;
  const username = overrides.username ?? `user${sequence}-${randomUUID().slice(0, 6)}`;
  const { user, password } = await app.services.users.create({
    username,
    email: overrides.email ?? `${username}@example.com`,
    password: overrides.password ?? 'correct horse battery',
    admin: overrides.admin ?? false,
    firstName: overrides.firstName,
  });
  return { ...user, password };
}

export function contextFor(user: User, ip = '127.0.0.1'): AuthenticatedContext {
  const actor: Actor = { user, apiKeyId: null, sessionId: null };
  return { batch: randomUUID(), ip, userAgent: 'test', actor };
}

/** Creates a key the way the API does and returns the full bearer token. */
export async function createApiKey(
  app: App,
  user: User,
  options: { allowedIps?: string[]; description?: string } = {},
): Promise<{ identifier: string; token: string }> {
  const { key, token } = await app.services.apiKeys.create(contextFor(user), {
    description: options.description ?? 'test key',
    allowed_ips: options.allowedIps ?? [],
  });
  return { identifier: key.identifier, token };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

export async function createServer(
  app: App,
  owner: User,
  options: { diskMb?: number; name?: string } = {},
): Promise<{ id: string; identifier: string; volume: string }> {
  const { server, volume } = await app.services.servers.create({
    owner: owner.username,
    name: options.name ?? 'test server',
    diskMb: options.diskMb ?? 0,
  });
  return { id: server.id, identifier: server.identifier, volume };
}

/** Makes `user` a subuser of `server` with exactly `permissions`. */
export async function addSubuser(
  app: App,
  serverId: string,
  user: User,
  permissions: string[],
): Promise<void> {
  await app.services.subusers.setByLogin(
    { batch: randomUUID(), ip: null, userAgent: 'test' },
    serverId,
    user.username,
    permissions,
  );
}

/** Stores a .tar.gz as a successful backup of the server. */
export async function importBackup(app: App, serverId: string, file: string, name = 'nightly') {
  return app.services.backupManagement.importArchive(serverId, name, file);
}

/** Runs queued jobs on a worker of this app until none is due. */
export async function drainJobs(app: App): Promise<number> {
  const worker = app.services.createWorker('test');
  let ran = 0;
  while (await worker.runOnce()) ran += 1;
  return ran;
}

/**
 * What the browser tests share: the panel built from web/ as it is now, a whole Aerie (API and
 * worker) on a real socket serving it, and Debian's Chromium driven by playwright-core.
 *
 * Without Chromium the tests are skipped with a `SKIPPED:` line; under CI (`CI=true`) they run
 * and fail instead, so a CI machine without a browser never passes by skipping them.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type Page,
} from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Worker } from '../../src/jobs/worker.ts';
import { ROOT } from '../support/aerie-process.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

const run = promisify(execFile);

export const CHROMIUM = process.env.AERIE_TEST_CHROMIUM ?? '/usr/bin/chromium';
const IN_CI = process.env.CI === 'true';
const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);

/** Whether the browser tests run here: with Chromium, or always under CI (where they then fail). */
export const RUN_BROWSER_TESTS = HAVE_CHROMIUM || IN_CI;
if (!RUN_BROWSER_TESTS) console.log(`SKIPPED: browser tests: no Chromium at ${CHROMIUM}`);

/** Where AERIE_SCREENSHOTS=1 saves each page's picture, for the README. */
export const SCREENSHOTS = process.env.AERIE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/screenshots') : null;

const WEB = path.join(ROOT, 'web');

function webSources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

/**
 * The panel built from web/ as it is now, into <tmpdir>/aerie-panel-<hash of its sources>: built once for
 * every test file that needs that version (into a directory of its own, then renamed into place,
 * so test files running at once never see half a build), never the dist/web a build may replace.
 */
export async function builtPanel(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of webSources(WEB))
    hash.update(path.relative(WEB, file)).update('\0').update(fs.readFileSync(file));
  const target = path.join(os.tmpdir(), `aerie-panel-${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(path.join(target, 'index.html'))) return target;
  const scratch = `${target}.${process.pid}.building`;
  const vite = path.join(ROOT, 'node_modules/vite/bin/vite.js');
  await run(
    process.execPath,
    [vite, 'build', WEB, '--outDir', scratch, '--emptyOutDir', '--logLevel', 'warn'],
    {
      cwd: ROOT,
    },
  );
  try {
    fs.renameSync(scratch, target);
  } catch {
    // Another test file built the same sources first: use its build.
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  // Builds of older sources, left a day ago or more, are not needed again.
  for (const entry of fs.readdirSync(os.tmpdir())) {
    const old = path.join(os.tmpdir(), entry);
    if (!entry.startsWith('aerie-panel-') || old === target) continue;
    const stat = fs.statSync(old, { throwIfNoEntry: false });
    if (stat !== undefined && Date.now() - stat.mtimeMs > 24 * 3600_000)
      fs.rmSync(old, { recursive: true, force: true });
  }
  return target;
}

export interface PanelServer {
  app: TestApp;
  url: string;
  /** Stops running jobs (queued ones wait), until `resumeJobs`. */
  pauseJobs(): Promise<void>;
  resumeJobs(): void;
  close(): Promise<void>;
}

/** A whole Aerie serving the current panel on 127.0.0.1, with a worker that runs its jobs. */
export async function startPanelServer(env: Record<string, string> = {}): Promise<PanelServer> {
  const panel = await builtPanel();
  const app = await startTestApp({
    env: { AERIE_PANEL_DIR: panel, AERIE_WORKER_POLL_MS: '50', AERIE_PROGRESS_INTERVAL_MS: '100', ...env },
  });
  await app.http.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.http.server.address() as AddressInfo).port}`;
  let worker: Worker | null = null;
  let workers = 0;
  const resumeJobs = () => {
    if (worker !== null) return;
    workers += 1;
    worker = app.services.createWorker(`web-${workers}`);
    worker.start();
  };
  const pauseJobs = async () => {
    const stopping = worker;
    worker = null;
    await stopping?.stop();
  };
  resumeJobs();
  return {
    app,
    url,
    pauseJobs,
    resumeJobs,
    async close() {
      await pauseJobs();
      await app.close();
    },
  };
}

/** Headless Chromium; as root it needs --no-sandbox. */
export async function launchBrowser(): Promise<Browser> {
  if (!HAVE_CHROMIUM)
    throw new Error(`The browser tests need Chromium at ${CHROMIUM} (apt-get install chromium).`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/**
 * A fresh browser context (its own cookies) with a page on `baseURL`; every error the page logs,
 * and every request the Content-Security-Policy blocks, fails the test at `checkPage`.
 */
export async function openPage(
  browser: Browser,
  baseURL: string,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({
    baseURL,
    viewport: { width: 1280, height: 860 },
    locale: 'en-GB',
    timezoneId: 'UTC',
    colorScheme: 'light',
    reducedMotion: 'reduce',
    ...options,
  });
  // Under the whole suite on two cores, one step (a password hash, a page's first render) has
  // taken over 10 s on PostgreSQL; a test still fails within its own 30 s.
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    // A 4xx a test provokes on purpose (a wrong password, a 422) is logged by Chromium as a
    // failed resource; those are expected. Anything else the console calls an error is not.
    if (message.type() === 'error' && !/status of 4\d\d/.test(text)) problems.push(text);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, problems };
}

/** The panel server and the browser a describe block's tests share (see `usePanel`). */
export interface Panel {
  server: PanelServer;
  browser: Browser;
  /** `openPage` on this panel's server. */
  open(options?: BrowserContextOptions): ReturnType<typeof openPage>;
}

/**
 * Starts a panel server and Chromium before the describe block's tests (then runs `seed`, if
 * given) and closes both after them.
 */
export function usePanel(seed?: (server: PanelServer) => Promise<void>): Panel {
  let server: PanelServer | undefined;
  let browser: Browser | undefined;
  const panel = {
    open: (options: BrowserContextOptions = {}) => openPage(panel.browser, panel.server.url, options),
  } as Panel;
  beforeAll(async () => {
    [server, browser] = await Promise.all([startPanelServer(), launchBrowser()]);
    panel.server = server;
    panel.browser = browser;
    await seed?.(server);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  return panel;
}

/** Nothing went wrong in the page: no script error, no CSP violation. */
export function checkPage(problems: string[]): void {
  expect(problems, problems.join('\n')).toEqual([]);
}

export async function logIn(page: Page, user: string, password: string, path = '/'): Promise<void> {
  await page.goto(path);
  await page.getByLabel('Username or email').fill(user);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  // The panel's frame (on a phone its Log out button is behind the menu).
  await page.locator('.shell h1').waitFor();
}

/** Saves a picture of the page for the README (AERIE_SCREENSHOTS=1 only). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS === null) return;
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate('document.fonts.ready');
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

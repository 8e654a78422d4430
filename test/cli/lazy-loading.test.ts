/**
 * A process loads the drivers and libraries it uses, not all of them: `aerie migrate` on SQLite
 * loads neither PostgreSQL's nor MariaDB's driver, nor Redis, Prometheus or the HTTP framework.
 * Each would cost it 10-15 MB of memory and start-up time.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { aerieArgv } from '../support/aerie-process.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** The npm packages a run of `aerie <args>` loaded, read from the module cache as it exits. */
function packagesLoaded(args: string[], env: Record<string, string>): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-lazy-'));
  dirs.push(dir);
  const probe = path.join(dir, 'probe.cjs');
  fs.writeFileSync(
    probe,
    `process.on('exit', () => {
       const names = new Set();
       for (const file of Object.keys(require.cache)) {
         const m = /.*node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)[\\\\/]/.exec(file);
         if (m) names.add(m[1].replace('\\\\', '/'));
       }
       require('fs').writeFileSync(${JSON.stringify(path.join(dir, 'loaded.json'))}, JSON.stringify([...names]));
     });`,
  );
  execFileSync(process.execPath, ['--require', probe, ...aerieArgv(args)], {
    env: { ...process.env, AERIE_DATA_DIR: dir, DATABASE_URL: `sqlite:${path.join(dir, 'a.db')}`, ...env },
    stdio: 'ignore',
  });
  return JSON.parse(fs.readFileSync(path.join(dir, 'loaded.json'), 'utf8')) as string[];
}

it('aerie migrate on SQLite loads SQLite alone of the drivers, and no server libraries', () => {
  const loaded = packagesLoaded(['migrate'], { LOG_LEVEL: 'silent' });
  expect(loaded).toContain('better-sqlite3');
  for (const unused of ['pg', 'mysql2', 'ioredis', 'prom-client', 'fastify', '@aws-sdk/client-s3'])
    expect(loaded).not.toContain(unused);
});

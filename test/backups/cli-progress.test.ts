import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import { testDatabase } from '../support/databases.ts';

const run = promisify(execFile);

/** Runs the CLI on a pseudo-terminal (util-linux `script`), as a person at a terminal would. */
async function onTerminal(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const command = [process.execPath, ...aerieArgv(args)]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(' ');
  const { stdout } = await run('script', ['-qec', command, '/dev/null'], { env, cwd: ROOT });
  return stdout;
}

describe('backup create and import on a terminal', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let database: Awaited<ReturnType<typeof testDatabase>> | undefined;
  let serverId: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-cli-tty-'));
    database = await testDatabase(dir);
    env = { ...process.env, AERIE_DATA_DIR: dir, DATABASE_URL: database.url };
    await run(
      process.execPath,
      aerieArgv(['user', 'create', '--username', 'tty', '--email', 'tty@example.com']),
      { env },
    );
    const { stdout } = await run(
      process.execPath,
      aerieArgv(['server', 'create', '--owner', 'tty', '--name', 's', '--json']),
      {
        env,
      },
    );
    const server = JSON.parse(stdout) as { uuid: string; volume: string };
    serverId = server.uuid;
    for (let i = 0; i < 20; i++)
      fs.writeFileSync(path.join(server.volume, `file-${i}.dat`), Buffer.alloc(64 * 1024, i));
  });
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  it('shows files and bytes so far, then the record', async () => {
    const out = await onTerminal(['backup', 'create', '--server', serverId, '--name', 'by hand'], env);
    expect(out).toMatch(/\r20 files, 1\.3 MiB/);
    expect(out).toMatch(/created backup by hand \([0-9a-f-]{36}\)/);
  });

  it('prints only the JSON record with --json, even on a terminal', async () => {
    const out = await onTerminal(
      ['backup', 'create', '--server', serverId, '--name', 'quiet', '--json'],
      env,
    );
    expect(out).not.toMatch(/files, /);
    const record = JSON.parse(out.trim()) as Record<string, unknown>;
    expect(Object.keys(record).sort()).toEqual([
      'added_bytes',
      'bytes',
      'checksum',
      'files',
      'format',
      'name',
      'uuid',
    ]);
  });
});

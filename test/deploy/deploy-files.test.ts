/**
 * The deployment files (deploy/, Dockerfile, .dockerignore, docs/deploy.md) against the code they
 * deploy: every variable they set is one Aerie reads, the defaults they state are Aerie's, the
 * systemd units pass `systemd-analyze verify` and its offline security review, the Dockerfile
 * keeps the rules that matter for this image, and the health probes and the bucket one-shot they
 * run are run here against a live Aerie, a live worker and an S3-compatible server.
 *
 * There is no container engine here, so the image is never built: the Dockerfile is read by a small
 * parser below. `systemd-analyze` comes with Debian's systemd package; without it the unit tests
 * are skipped with a SKIPPED line, and under CI (CI=true) they fail instead.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { loadConfig } from '../../src/config.ts';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import { testDatabase } from '../support/databases.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';
import { startS3, type TestS3 } from '../support/s3.ts';
import { freePort } from '../support/wait.ts';

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const UNITS_DIR = path.join(ROOT, 'deploy/systemd');
const API_UNIT = 'aerie-api.service';
const WORKER_UNIT = 'aerie-worker@.service';

/** The S3 settings that switch backup storage to a bucket, so that its variables are read too. */
const S3_BASE = {
  AERIE_BACKUP_STORAGE: 's3',
  AERIE_S3_BUCKET: 'aerie-backups',
  AWS_ACCESS_KEY_ID: 'key',
  AWS_SECRET_ACCESS_KEY: 'secret',
};

/** Every environment variable `loadConfig` reads, found by watching it read (default and S3 paths). */
function variablesAerieReads(): Set<string> {
  const seen = new Set<string>();
  for (const env of [{}, { ...S3_BASE, AERIE_METRICS_ADDRESS: '127.0.0.1:9464' }]) {
    const watched = new Proxy<NodeJS.ProcessEnv>(env, {
      get(target, key) {
        if (typeof key === 'string') seen.add(key);
        return Reflect.get(target, key) as unknown;
      },
    });
    loadConfig(watched, os.tmpdir());
  }
  return new Set([...seen].filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name)));
}

const AERIE_VARIABLES = variablesAerieReads();
const DEFAULT_SHUTDOWN_SECONDS = loadConfig({}, os.tmpdir()).shutdownTimeoutMs / 1000;

/** A tool that the tests need: present, or (outside CI) skipped loudly. */
function toolAvailable(command: string, why: string): boolean {
  const probe = spawnSync(command, ['--version'], { encoding: 'utf8' });
  const present = probe.error === undefined && probe.status === 0;
  if (!present && process.env.CI === 'true') throw new Error(`CI must provide ${command} (${why})`);
  if (!present) process.stderr.write(`\nSKIPPED: ${command} is not installed; ${why}.\n`);
  return present;
}

// --- the environment file -----------------------------------------------------------------

interface EnvLine {
  name: string;
  value: string;
  commented: boolean;
}

/** `NAME=value` and `#NAME=value` lines (a comment in prose starts with `# `). */
function parseEnvFile(text: string): EnvLine[] {
  return text.split('\n').flatMap((line) => {
    const match = /^(#?)([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    return match ? [{ commented: match[1] === '#', name: match[2]!, value: match[3]! }] : [];
  });
}

describe('deploy/aerie.env.example', () => {
  const lines = parseEnvFile(read('deploy/aerie.env.example'));

  it('lists every variable Aerie reads, once, and nothing else', () => {
    const names = lines.map((line) => line.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...AERIE_VARIABLES].sort());
  });

  it("gives each commented variable Aerie's own default", () => {
    const defaults = lines.filter((line) => line.commented && line.value !== '');
    expect(defaults.length).toBeGreaterThan(15);
    for (const { name, value } of defaults) {
      const base = name.startsWith('AERIE_S3_') ? S3_BASE : {};
      expect(loadConfig({ ...base, [name]: value }, os.tmpdir()), name).toEqual(
        loadConfig(base, os.tmpdir()),
      );
    }
  });

  it('has plain values, read alike by systemd and by a shell that sources the file', () => {
    for (const { name, value } of lines) expect(value, name).toMatch(/^[A-Za-z0-9_.,:/@+=-]*$/);
  });

  it('loads as it is, and with every commented value set as well', () => {
    const set = Object.fromEntries(lines.filter((l) => !l.commented).map((l) => [l.name, l.value]));
    const config = loadConfig(set, os.tmpdir());
    expect(config.database.kind).toBe('postgres');
    expect(config.dataDir).toBe('/var/lib/aerie');
    expect(config.redisUrl).not.toBeNull();
    const all = Object.fromEntries(lines.filter((l) => l.value !== '').map((l) => [l.name, l.value]));
    expect(() => loadConfig(all, os.tmpdir())).not.toThrow();
  });
});

// --- systemd units --------------------------------------------------------------------------

/** A unit file's settings, section by section; a key set twice keeps both values, in order. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current: Record<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section) {
      current = sections[section[1]!] = {};
      continue;
    }
    const setting = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!setting || !current) throw new Error(`not a unit file line: ${line}`);
    (current[setting[1]!] ??= []).push(setting[2]!);
  }
  return sections;
}

function seconds(text: string): number {
  const match = /^(\d+)(s|min)?$/.exec(text);
  if (!match) throw new Error(`not a duration in seconds or minutes: ${text}`);
  return Number(match[1]) * (match[2] === 'min' ? 60 : 1);
}

describe('deploy/systemd units', () => {
  const units = {
    [API_UNIT]: { args: 'serve --role api', own: '/etc/aerie/aerie-api.env' },
    [WORKER_UNIT]: { args: 'worker --node %i', own: '/etc/aerie/aerie-worker-%i.env' },
  };

  for (const [file, expected] of Object.entries(units)) {
    it(`${file} runs the compiled build as aerie, hardened, stopping after Aerie's own deadline`, () => {
      const unit = parseUnit(fs.readFileSync(path.join(UNITS_DIR, file), 'utf8'));
      const service = unit.Service!;
      const one = (key: string) => {
        expect(service[key], key).toHaveLength(1);
        return service[key]![0]!;
      };
      expect(one('ExecStart')).toBe(`node /opt/aerie/bin/aerie.js ${expected.args}`);
      expect(service.EnvironmentFile).toEqual(['/etc/aerie/aerie.env', `-${expected.own}`]);
      expect(one('User')).toBe('aerie');
      expect(one('Group')).toBe('aerie');
      expect(one('Restart')).toBe('on-failure');
      expect(one('KillSignal')).toBe('SIGTERM');
      expect(seconds(one('TimeoutStopSec'))).toBeGreaterThan(DEFAULT_SHUTDOWN_SECONDS + 15);
      expect(one('NoNewPrivileges')).toBe('yes');
      expect(one('ProtectSystem')).toBe('strict');
      expect(one('PrivateTmp')).toBe('yes');
      expect(one('ReadWritePaths')).toBe('/var/lib/aerie');
      expect(one('StateDirectory')).toBe('aerie');
      expect(one('WorkingDirectory')).toBe('/var/lib/aerie');
      expect(one('CapabilityBoundingSet')).toBe('');
      // V8 compiles code at run time: this would stop Node at start.
      expect(service.MemoryDenyWriteExecute).toBeUndefined();
      expect(unit.Install?.WantedBy).toEqual(['multi-user.target']);
    });
  }

  it('the example environment file gives the units their data directory', () => {
    const dataDir = parseEnvFile(read('deploy/aerie.env.example')).find((l) => l.name === 'AERIE_DATA_DIR');
    expect(dataDir).toEqual({ name: 'AERIE_DATA_DIR', value: '/var/lib/aerie', commented: false });
  });

  const analyzer = toolAvailable('systemd-analyze', 'the systemd units are checked with it');
  const verify = (...args: string[]) =>
    spawnSync('systemd-analyze', ['verify', '--man=no', '--generators=no', ...args], {
      cwd: UNITS_DIR,
      encoding: 'utf8',
    });

  it.runIf(analyzer)('pass systemd-analyze verify without a warning (the worker as instance "local")', () => {
    const result = verify(`./${API_UNIT}`, `./${WORKER_UNIT}:aerie-worker@local.service`);
    expect(result.stderr + result.stdout).toBe('');
    expect(result.status).toBe(0);
  });

  it.runIf(analyzer)('systemd-analyze verify reports a broken copy (so the check above can fail)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-units-'));
    try {
      const broken = read(`deploy/systemd/${API_UNIT}`)
        .replace('Restart=on-failure', 'Restart=sometimes')
        .replace('ExecStart=node ', 'ExecStart=no-such-node ');
      fs.writeFileSync(path.join(dir, API_UNIT), broken);
      const result = spawnSync(
        'systemd-analyze',
        ['verify', '--man=no', '--generators=no', `./${API_UNIT}`],
        {
          cwd: dir,
          encoding: 'utf8',
        },
      );
      expect(result.stderr).toContain('sometimes');
      expect(result.stderr).toContain('no-such-node');
      expect(result.status).not.toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(analyzer)("keep systemd-analyze security's offline exposure at 4.0 or below", () => {
    for (const unit of [`./${API_UNIT}`, `./${WORKER_UNIT}:aerie-worker@local.service`]) {
      const result = spawnSync(
        'systemd-analyze',
        ['security', '--offline=yes', '--threshold=40', '--no-pager', unit],
        { cwd: UNITS_DIR, encoding: 'utf8' },
      );
      const exposure = /Overall exposure level for .*: (\d+\.\d)/.exec(result.stdout)?.[1];
      expect(Number(exposure), `${unit}\n${result.stdout}${result.stderr}`).toBeLessThanOrEqual(4);
      expect(result.status, unit).toBe(0);
    }
  });
});

// --- Dockerfile -----------------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}

/**
 * Instructions in order: comment lines dropped, `\` continuations joined. Enough of the format for
 * the checks below (no heredocs, no escape directive: the Dockerfile uses neither).
 */
function parseDockerfile(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw)) continue;
    const continued = /\\\s*$/.test(raw);
    pending += (pending === '' ? '' : ' ') + raw.replace(/\\\s*$/, '').trim();
    if (continued) continue;
    if (pending.trim() !== '') {
      const match = /^(\S+)\s*(.*)$/.exec(pending.trim())!;
      instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]! });
    }
    pending = '';
  }
  if (pending !== '') throw new Error('the Dockerfile ends inside a continued line');
  return instructions;
}

/** The stages, each starting at its FROM. */
function stages(instructions: Instruction[]): Instruction[][] {
  const result: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') result.push([]);
    if (result.length === 0) throw new Error(`${instruction.keyword} before the first FROM`);
    result.at(-1)!.push(instruction);
  }
  return result;
}

/** `--flag=value` options at the start of COPY/HEALTHCHECK arguments, and what follows them. */
function options(args: string): { flags: Record<string, string>; rest: string } {
  const flags: Record<string, string> = {};
  let rest = args;
  for (let match = /^--([a-z-]+)=(\S+)\s+/.exec(rest); match; match = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    flags[match[1]!] = match[2]!;
    rest = rest.slice(match[0].length);
  }
  return { flags, rest };
}

/** Patterns of a .dockerignore (top-level names and simple globs, as this repository's is). */
function ignored(patterns: string[], file: string): boolean {
  return patterns.some((pattern) => {
    const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`);
    return regex.test(file);
  });
}

describe('Dockerfile', () => {
  const instructions = parseDockerfile(read('Dockerfile'));
  const [build, runtime] = stages(instructions) as [Instruction[], Instruction[]];
  const all = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);
  const last = (stage: Instruction[], keyword: string) => all(stage, keyword).at(-1);

  it('has a build stage and a runtime stage, on pinned Node images of one Debian release', () => {
    expect(stages(instructions)).toHaveLength(2);
    const images = [build, runtime].map((stage) => stage[0]!.args.split(/\s+/)[0]!);
    for (const image of images) expect(image).toMatch(/^node:\d+\.\d+\.\d+-[a-z]+(-slim)?$/);
    // The native module (better-sqlite3) built in the first must load in the second.
    const [buildImage, runtimeImage] = images as [string, string];
    expect(runtimeImage.replace(/-slim$/, '')).toBe(buildImage);
    const nodeMajor = Number(/^node:(\d+)/.exec(buildImage)![1]);
    const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
    expect(nodeMajor).toBeGreaterThanOrEqual(Number(/\d+/.exec(engines)![0]));
    expect(build[0]!.args).toMatch(/\sAS\s+build$/i);
  });

  it('builds with the development dependencies, then keeps only the production ones', () => {
    const run = all(build, 'RUN')
      .map((i) => i.args)
      .join(' && ');
    expect(run).toMatch(/npm ci\b/);
    expect(run).toMatch(/npm prune --omit=dev\b/);
    expect(run).not.toMatch(/npm ci[^&]*--omit=dev/);
    expect(run).not.toMatch(/npm (install|i)\b/);
    // npm ci runs the prepare script, and that is what builds dist/.
    expect((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.prepare).toBe(
      'npm run build',
    );
  });

  it('copies into the build only files the repository has and .dockerignore lets through', () => {
    const patterns = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    const sources = all(build, 'COPY').flatMap((i) => options(i.args).rest.split(/\s+/).slice(0, -1));
    expect(sources).toEqual(
      expect.arrayContaining(['package.json', 'package-lock.json', 'tsconfig.build.json', 'bin', 'src']),
    );
    for (const source of sources) {
      expect(fs.existsSync(path.join(ROOT, source)), source).toBe(true);
      expect(ignored(patterns, source), source).toBe(false);
    }
    for (const kept of ['node_modules', 'dist', '.git', 'data', '.tmp'])
      expect(ignored(patterns, kept)).toBe(true);
  });

  it('never uses ADD, and copies the runtime files read-only for the process (owned by root)', () => {
    expect(all(build, 'ADD').concat(all(runtime, 'ADD'))).toEqual([]);
    const copies = all(runtime, 'COPY').map((i) => options(i.args));
    const copied = copies.map(({ rest }) => rest.split(/\s+/)[0]);
    expect(copied).toEqual(
      expect.arrayContaining(['/src/package.json', '/src/node_modules', '/src/bin', '/src/dist']),
    );
    for (const { flags } of copies) {
      expect(flags.from).toBe('build');
      expect(flags.chown).toBe('root:root');
    }
  });

  it('runs as a non-root user that owns only the data volume', () => {
    const env: Record<string, string> = Object.fromEntries(
      all(runtime, 'ENV').flatMap((i) =>
        [...i.args.matchAll(/([A-Z_]+)=(\S+)/g)].map((m): [string, string] => [m[1]!, m[2]!]),
      ),
    );
    expect(env.HOST).toBe('0.0.0.0');
    expect(env.AERIE_DATA_DIR).toBe('/var/lib/aerie');
    for (const name of Object.keys(env).filter((n) => n !== 'NODE_ENV'))
      expect(AERIE_VARIABLES).toContain(name);
    const user = last(runtime, 'USER')!.args;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    const userIndex = runtime.indexOf(last(runtime, 'USER')!);
    expect(runtime.findIndex((i) => i.keyword === 'ENTRYPOINT')).toBeGreaterThan(userIndex);
    expect(
      all(runtime, 'RUN').some((i) => i.args.includes(`chown ${user}:${user} ${env.AERIE_DATA_DIR}`)),
    ).toBe(true);
    expect(JSON.parse(last(runtime, 'VOLUME')!.args)).toEqual([env.AERIE_DATA_DIR]);
    expect(last(runtime, 'EXPOSE')!.args).toBe(env.PORT);
  });

  it('runs the compiled build, in exec form (so SIGTERM reaches Node)', () => {
    expect(JSON.parse(last(runtime, 'ENTRYPOINT')!.args)).toEqual(['node', '/opt/aerie/bin/aerie.js']);
    expect(JSON.parse(last(runtime, 'CMD')!.args)).toEqual(['serve']);
    expect(last(runtime, 'STOPSIGNAL')?.args ?? 'SIGTERM').toBe('SIGTERM');
    expect(read('bin/aerie.js')).toContain("'../dist/main.js'");
  });

  it('has a HEALTHCHECK on /health/live, with Node (the image has no curl)', () => {
    const { rest } = options(last(runtime, 'HEALTHCHECK')!.args);
    expect(rest.startsWith('CMD [')).toBe(true);
    const command = JSON.parse(rest.slice('CMD '.length)) as string[];
    expect(command.slice(0, 2)).toEqual(['node', '-e']);
    expect(command[2]).toContain('/health/live');
  });
});

// --- compose.yaml ---------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test?: string[]; disable?: boolean };
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  stop_grace_period?: string;
}

/** `${NAME:?message}` and `${NAME:-default}` as Compose fills them in, from `values`. */
function interpolate(text: string, values: Record<string, string>): string {
  return text.replace(
    /\$\{([A-Z_]+)(?::([?-])([^}]*))?\}/g,
    (_all, name: string, kind?: string, rest?: string) => {
      const value = values[name];
      if (value !== undefined && value !== '') return value;
      if (kind === '?') throw new Error(`compose needs ${name}: ${rest}`);
      return kind === '-' ? (rest ?? '') : '';
    },
  );
}

/** The compose file as Compose reads it: parsed (merge keys and all), then its strings filled in. */
function loadCompose(values: Record<string, string>): {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
} {
  const fill = (node: unknown): unknown => {
    if (typeof node === 'string') return interpolate(node, values);
    if (Array.isArray(node)) return node.map(fill);
    if (node !== null && typeof node === 'object')
      return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, fill(value)]));
    return node;
  };
  return fill(parseYaml(read('deploy/compose.yaml'), { merge: true })) as ReturnType<typeof loadCompose>;
}

const COMPOSE_VALUES = {
  POSTGRES_PASSWORD: 'postgres-secret',
  MINIO_ROOT_PASSWORD: 'minio-secret',
  AERIE_APP_KEY: 'k'.repeat(48),
};

describe('deploy/compose.yaml', () => {
  const text = read('deploy/compose.yaml');
  const compose = loadCompose(COMPOSE_VALUES);
  const services = compose.services;
  const aerie = Object.entries(services).filter(([, service]) => service.image === 'aerie:local');

  it('refuses to start without its secrets', () => {
    for (const name of Object.keys(COMPOSE_VALUES)) {
      expect(() => loadCompose({ ...COMPOSE_VALUES, [name]: '' })).toThrow(name);
    }
  });

  it('runs PostgreSQL, Redis, an S3-compatible store, an API and a worker, on pinned images', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgres', 'redis', 'minio', 'migrate', 'bucket', 'api', 'worker']),
    );
    for (const [name, service] of Object.entries(services)) {
      if (service.build !== undefined) continue; // built from the Dockerfile, whose images are pinned
      expect(service.image, name).toMatch(/^[a-z0-9/._-]+:[A-Za-z0-9._-]*\d[A-Za-z0-9._-]*$/);
      expect(service.image, name).not.toMatch(/:latest$/);
    }
    expect(services.api!.command).toEqual(['serve', '--role', 'api']);
    expect(services.worker!.command).toEqual(['worker', '--node', 'local']);
    expect(services.migrate!.command).toEqual(['migrate']);
    for (const [name, service] of aerie) {
      expect(service.build, name).toEqual({ context: '..', dockerfile: 'Dockerfile' });
      expect(
        fs.existsSync(path.join(ROOT, 'deploy', service.build!.context, service.build!.dockerfile)),
      ).toBe(true);
    }
  });

  it('gives every Aerie process the same settings, all of them variables Aerie reads, and valid', () => {
    const base = services.migrate!.environment!;
    for (const [name, service] of aerie) {
      const env = service.environment!;
      for (const variable of Object.keys(env))
        expect(AERIE_VARIABLES, `${name}: ${variable}`).toContain(variable);
      expect(env, name).toMatchObject(base);
      const config = loadConfig(env, '/');
      expect(config.database.kind).toBe('postgres');
      expect(config.redisUrl).toBe('redis://redis:6379');
      expect(config.backupStorage.kind).toBe('s3');
      expect(config.appKey).toBe(COMPOSE_VALUES.AERIE_APP_KEY);
    }
    const s3 = services.migrate!.environment!;
    const postgres = services.postgres!.environment!;
    expect(s3.AWS_ACCESS_KEY_ID).toBe(services.minio!.environment!.MINIO_ROOT_USER);
    expect(s3.AWS_SECRET_ACCESS_KEY).toBe(services.minio!.environment!.MINIO_ROOT_PASSWORD);
    expect(s3.DATABASE_URL).toBe(
      `postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgres:5432/${postgres.POSTGRES_DB}`,
    );
    expect(loadConfig(services.api!.environment, '/').host).toBe('0.0.0.0');
  });

  it('shares one data volume between the API and the worker, at the data directory', () => {
    const dataDir = services.api!.environment!.AERIE_DATA_DIR;
    for (const name of ['api', 'worker']) {
      expect(services[name]!.volumes).toEqual([`aerie-data:${dataDir}`]);
      expect(seconds(services[name]!.stop_grace_period!)).toBeGreaterThan(
        Number(services[name]!.environment!.AERIE_SHUTDOWN_TIMEOUT_SECONDS) + 15,
      );
    }
    expect(Object.keys(compose.volumes)).toContain('aerie-data');
  });

  it('starts in order: healthy servers, then migrate and the bucket once, then the API and the worker', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        const target = services[dependency]!;
        if (condition === 'service_healthy') {
          expect(target.healthcheck?.test, `${name} waits for ${dependency}'s health`).toBeDefined();
        } else {
          expect(condition).toBe('service_completed_successfully');
          expect(target.restart, `${dependency} runs once`).toBe('no');
        }
      }
    }
    expect(services.migrate!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(services.bucket!.depends_on).toEqual({ minio: { condition: 'service_healthy' } });
    for (const name of ['api', 'worker']) {
      expect(services[name]!.depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        bucket: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
      });
      expect(services[name]!.healthcheck!.test!.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    }
  });

  it('has no `$` but its own variables, which Compose would read as one (in the one-shot script, say)', () => {
    const stray = text
      .split('\n')
      .filter((line) => !/^\s*#/.test(line))
      .map((line) => line.replace(/\$\{[A-Z_]+(:[?-][^}]*)?\}/g, ''))
      .filter((line) => line.includes('$'));
    expect(stray).toEqual([]);
  });

  // Optional (Debian's docker-compose package): its schema check adds to the checks above.
  const composeTool = spawnSync('docker-compose', ['--version']).status === 0;
  if (!composeTool)
    process.stderr.write(
      '\nSKIPPED: docker-compose is not installed; compose.yaml is not checked against its schema.\n',
    );
  it.runIf(composeTool)('passes docker-compose config (its schema), when docker-compose is installed', () => {
    const result = spawnSync('docker-compose', ['-f', 'deploy/compose.yaml', 'config', '--quiet'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, ...COMPOSE_VALUES },
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});

// --- the probes and the one-shot, run for real ----------------------------------------------

/** Runs `node -e script` from the repository's root and gives back its exit status and output. */
function runNode(
  script: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the health probes and the bucket one-shot', () => {
  const runtime = stages(parseDockerfile(read('Dockerfile')))[1]!;
  const dockerProbe = (
    JSON.parse(options(runtime.find((i) => i.keyword === 'HEALTHCHECK')!.args).rest.slice(4)) as string[]
  )[2]!;
  const compose = loadCompose(COMPOSE_VALUES);
  const probe = (name: string) => compose.services[name]!.healthcheck!.test![3]!;

  let app: TestApp;
  let port: number;
  beforeAll(async () => {
    app = await startTestApp();
    await app.http.listen({ host: '127.0.0.1', port: 0 });
    port = (app.http.server.address() as net.AddressInfo).port;
  });
  afterAll(() => app.close());

  it("the image's probe passes while Aerie answers on PORT, and fails when nothing does", async () => {
    expect(await runNode(dockerProbe, { PORT: String(port) })).toMatchObject({ code: 0, stdout: '' });
    expect((await runNode(dockerProbe, { PORT: String(await freePort()) })).code).toBe(1);
  });

  it("the API service's probe passes when Aerie is ready", async () => {
    expect(probe('api')).toContain('127.0.0.1:8080/health/ready');
    const script = probe('api').replace('127.0.0.1:8080', `127.0.0.1:${port}`);
    expect(await runNode(script)).toMatchObject({ code: 0, stdout: '' });
  });

  it("the worker service's probe passes against a live `aerie worker`'s metrics listener", async () => {
    const address = compose.services.worker!.environment!.AERIE_METRICS_ADDRESS!;
    expect(probe('worker')).toContain(`127.0.0.1:${address.split(':')[1]}/metrics`);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-worker-probe-'));
    const database = await testDatabase(dataDir);
    const metricsPort = await freePort();
    const worker = spawn(process.execPath, aerieArgv(['worker', '--node', 'local']), {
      cwd: dataDir,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        AERIE_DATA_DIR: dataDir,
        AERIE_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    try {
      const script = probe('worker').replace(
        `127.0.0.1:${address.split(':')[1]}`,
        `127.0.0.1:${metricsPort}`,
      );
      const deadline = Date.now() + 20_000;
      let result = await runNode(script);
      while (result.code !== 0 && Date.now() < deadline && worker.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        result = await runNode(script);
      }
      expect(result).toMatchObject({ code: 0, stdout: '' });
    } finally {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGTERM');
      await exited;
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  describe('the bucket one-shot', () => {
    let s3: TestS3;
    beforeAll(async () => {
      s3 = await startS3();
    });
    afterAll(() => s3.close());

    it('creates the bucket when it is missing, and leaves it alone when it exists', async () => {
      const bucket = compose.services.bucket!;
      expect(bucket.entrypoint).toEqual(['node', '-e']);
      const script = bucket.command![0]!;
      const env = {
        ...bucket.environment!,
        AERIE_S3_ENDPOINT: s3.endpoint,
        AERIE_S3_BUCKET: 'made-by-the-one-shot',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      };
      // (stderr may carry the S3 client's warnings about the Node version)
      expect(await runNode(script, env)).toMatchObject({
        code: 0,
        stdout: 'bucket made-by-the-one-shot created\n',
      });
      expect(await s3.client.send(new HeadBucketCommand({ Bucket: 'made-by-the-one-shot' }))).toBeDefined();
      expect(await runNode(script, env)).toMatchObject({
        code: 0,
        stdout: 'bucket made-by-the-one-shot exists\n',
      });
      const unreachable = await runNode(script, {
        ...env,
        AERIE_S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      });
      expect(unreachable.code).toBe(1);
    });
  });
});

// --- docs/deploy.md ---------------------------------------------------------------------------

describe('docs/deploy.md', () => {
  const doc = read('docs/deploy.md');

  it('names only variables Aerie reads, and is linked from the README', () => {
    const named = new Set(
      [...doc.matchAll(/\b(AERIE_[A-Z0-9_]+|TRUST_PROXY|REDIS_URL|DATABASE_URL)\b/g)].map((m) => m[1]!),
    );
    for (const name of named) expect(AERIE_VARIABLES, name).toContain(name);
    expect(read('README.md')).toContain('(docs/deploy.md)');
  });

  it('links only to files that exist', () => {
    const links = [...doc.matchAll(/\]\(((?:\.\.\/|\.\/)?[^):#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(3);
    for (const link of links) expect(fs.existsSync(path.join(ROOT, 'docs', link)), link).toBe(true);
  });
});

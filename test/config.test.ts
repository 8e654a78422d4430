import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('loadConfig', () => {
  it('defaults to the embedded setup under ./data', () => {
    const config = loadConfig({}, '/srv/aerie');
    expect(config.database).toEqual({
      kind: 'sqlite',
      url: 'sqlite:/srv/aerie/data/aerie.db',
      sqlitePath: '/srv/aerie/data/aerie.db',
    });
    expect(config.volumesDir).toBe('/srv/aerie/data/volumes');
    expect(config.backupsDir).toBe('/srv/aerie/data/backups');
    expect([config.host, config.port]).toEqual(['127.0.0.1', 8080]);
    expect(config.trustProxy).toBe(false);
    expect([config.loginAttemptsPer15Minutes, config.loginAccountAttemptsPerHour]).toEqual([10, 300]);
    expect([config.jobTimeoutMs, config.shutdownTimeoutMs, config.requestTimeoutMs]).toEqual([
      6 * 3600_000,
      30_000,
      30_000,
    ]);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('writes logs as JSON, or pretty on a terminal, unless AERIE_LOG_FORMAT says which', () => {
    expect(loadConfig({}).logFormat).toBe('auto');
    expect(loadConfig({ AERIE_LOG_FORMAT: ' JSON ' }).logFormat).toBe('json');
    expect(loadConfig({ AERIE_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
  });

  it('reads each kind of DATABASE_URL', () => {
    expect(loadConfig({ DATABASE_URL: 'sqlite:./x.db' }, '/a').database.sqlitePath).toBe(
      path.resolve('/a', 'x.db'),
    );
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).database.kind).toBe('postgres');
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).database.kind).toBe('postgres');
    expect(loadConfig({ DATABASE_URL: 'mariadb://u@h/db' }).database).toMatchObject({
      kind: 'mysql',
      url: 'mysql://u@h/db',
    });
  });

  it('reads TRUST_PROXY as a flag, a hop count or a list', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '127.0.0.1',
    ]);
  });

  it('reads AERIE_PUBLIC_URL as an origin with an optional path prefix, without a trailing slash', () => {
    expect(loadConfig({}).publicUrl).toBeNull();
    expect(loadConfig({ AERIE_PUBLIC_URL: '' }).publicUrl).toBeNull();
    expect(loadConfig({ AERIE_PUBLIC_URL: 'https://Panel.Example.com' }).publicUrl).toBe(
      'https://panel.example.com',
    );
    expect(loadConfig({ AERIE_PUBLIC_URL: 'http://10.0.0.7:8080/' }).publicUrl).toBe('http://10.0.0.7:8080');
    expect(loadConfig({ AERIE_PUBLIC_URL: 'https://[::1]:443/aerie/v1/' }).publicUrl).toBe(
      'https://[::1]/aerie/v1',
    );
  });

  it.each([
    'panel.example.com',
    '/aerie',
    'ftp://panel.example.com',
    'javascript:alert(1)',
    'https://',
    'http:/panel.example.com',
    'https://panel.example.com:99999',
    'https://user:secret@panel.example.com',
    'https://panel.example.com/?page=1',
    'https://panel.example.com/?',
    'https://panel.example.com/#top',
    'https://pan el.example.com',
  ])('stops on AERIE_PUBLIC_URL=%s, naming it', (value) => {
    expect(() => loadConfig({ AERIE_PUBLIC_URL: value })).toThrow(ConfigError);
    expect(() => loadConfig({ AERIE_PUBLIC_URL: value })).toThrow(/AERIE_PUBLIC_URL/);
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'oracle://x'],
    ['DATABASE_URL', 'sqlite:'],
    ['LOG_LEVEL', 'loud'],
    ['AERIE_LOG_FORMAT', 'fancy'],
    ['AERIE_LOGIN_ATTEMPTS_PER_15_MINUTES', '-1'],
    ['AERIE_LOGIN_ACCOUNT_ATTEMPTS_PER_HOUR', 'lots'],
    ['AERIE_JOB_LEASE_SECONDS', '0'],
    ['AERIE_JOB_TIMEOUT_SECONDS', '0'],
    ['AERIE_JOB_RETRY_MINUTES', '-1'],
    ['AERIE_SHUTDOWN_TIMEOUT_SECONDS', 'soon'],
    ['AERIE_REQUEST_TIMEOUT_SECONDS', '0'],
  ])('stops on a bad %s (%s) with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(
      name === 'DATABASE_URL' ? /DATABASE_URL/ : new RegExp(name),
    );
  });
});

describe('operations settings', () => {
  it('retries jobs that cannot reach the store or the database for 15 minutes by default; 0 does not', () => {
    expect(loadConfig({}).jobRetryWindowMs).toBe(15 * 60_000);
    expect(loadConfig({ AERIE_JOB_RETRY_MINUTES: '60' }).jobRetryWindowMs).toBe(3_600_000);
    expect(loadConfig({ AERIE_JOB_RETRY_MINUTES: '0' }).jobRetryWindowMs).toBe(0);
  });

  it('keeps 90 days of activity by default; 0 keeps everything', () => {
    expect(loadConfig({}).activityRetentionDays).toBe(90);
    expect(loadConfig({ AERIE_ACTIVITY_RETENTION_DAYS: '0' }).activityRetentionDays).toBe(0);
    expect(loadConfig({ AERIE_ACTIVITY_RETENTION_DAYS: '365' }).activityRetentionDays).toBe(365);
  });

  it('has metrics off by default, on the API listener with AERIE_METRICS=on, or on their own address', () => {
    expect(loadConfig({}).metrics).toEqual({ enabled: false, address: null });
    expect(loadConfig({ AERIE_METRICS: 'off' }).metrics).toEqual({ enabled: false, address: null });
    expect(loadConfig({ AERIE_METRICS: 'on' }).metrics).toEqual({ enabled: true, address: null });
    expect(loadConfig({ AERIE_METRICS_ADDRESS: '127.0.0.1:9464' }).metrics).toEqual({
      enabled: true,
      address: { host: '127.0.0.1', port: 9464 },
    });
    expect(loadConfig({ AERIE_METRICS: 'ON', AERIE_METRICS_ADDRESS: '[::1]:9100' }).metrics).toEqual({
      enabled: true,
      address: { host: '::1', port: 9100 },
    });
    expect(loadConfig({ AERIE_METRICS_ADDRESS: 'metrics.internal:9464' }).metrics.address).toEqual({
      host: 'metrics.internal',
      port: 9464,
    });
  });

  it.each([
    ['AERIE_ACTIVITY_RETENTION_DAYS', '-1'],
    ['AERIE_ACTIVITY_RETENTION_DAYS', 'forever'],
    ['AERIE_ACTIVITY_RETENTION_DAYS', '1.5'],
    ['AERIE_METRICS', 'yes'],
    ['AERIE_METRICS_ADDRESS', '9464'],
    ['AERIE_METRICS_ADDRESS', '127.0.0.1'],
    ['AERIE_METRICS_ADDRESS', '127.0.0.1:0'],
    ['AERIE_METRICS_ADDRESS', '127.0.0.1:70000'],
    ['AERIE_METRICS_ADDRESS', '::1:9464'],
    ['AERIE_METRICS_ADDRESS', 'http://127.0.0.1:9464'],
  ])('stops on a bad %s (%s) with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('refuses a metrics address with metrics turned off', () => {
    expect(() => loadConfig({ AERIE_METRICS: 'off', AERIE_METRICS_ADDRESS: '127.0.0.1:9464' })).toThrow(
      /AERIE_METRICS_ADDRESS is set but AERIE_METRICS is off/,
    );
  });
});

/**
 * Several processes starting at once on one new SQLite file (say `aerie serve` and `aerie worker`
 * under one service manager) all migrate it: they must do so one after the other, each
 * migration applied once, none of them failing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { spawnAerie } from '../support/aerie-process.ts';
import { startTestApp } from '../support/harness.ts';

describe('aerie migrate, four processes at once on one new SQLite file', () => {
  it('applies each migration once, and every process succeeds', { timeout: 120_000 }, async () => {
    const app = await startTestApp();
    try {
      for (let round = 0; round < 3; round++) {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-migrate-race-'));
        const env = { AERIE_DATA_DIR: dataDir, DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}` };
        const processes = Array.from({ length: 4 }, () => spawnAerie(app, ['migrate'], env));
        const codes = await Promise.all(processes.map((p) => p.exited));
        expect(codes, processes.map((p) => p.output()).join('\n')).toEqual([0, 0, 0, 0]);
        const file = new SQLite(path.join(dataDir, 'aerie.db'), { readonly: true });
        const names = file.prepare('select name from aerie_migrations').pluck().all() as string[];
        file.close();
        expect(names.length).toBeGreaterThan(5);
        expect(new Set(names).size).toBe(names.length);
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    } finally {
      await app.close();
    }
  });
});

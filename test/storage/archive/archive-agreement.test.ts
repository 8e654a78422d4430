/**
 * `aerie backup import` verifies an archive; a restore extracts it. Both read it with the same
 * reader, so for every hostile or malformed archive they must give the same verdict: both accept
 * it, or both refuse it with the same reason and message.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, mkdir, realpath, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveError } from '../../../src/storage/archive/archive.types.ts';
import { extractArchive } from '../../../src/storage/archive/extract.ts';
import { verifyArchive } from '../../../src/storage/archive/verify-archive.ts';
import { hostileArchives } from './hostile-archives.ts';

type Verdict = 'ok' | { reason: string; message: string };

async function verdictOf(run: Promise<unknown>): Promise<Verdict> {
  try {
    await run;
    return 'ok';
  } catch (err) {
    if (!(err instanceof ArchiveError)) throw err;
    return { reason: err.reason, message: err.message };
  }
}

let root = '';
beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'aerie-agree-')));
});
afterAll(() => {
  // rm(1): some trees hold paths longer than one system call accepts.
  if (root !== '') execFileSync('rm', ['-rf', root]);
});

describe('verifyArchive and extractArchive agree on every hostile or malformed archive', () => {
  for (const [index, archive] of hostileArchives.entries()) {
    it(`${archive.name}: ${archive.verdict}`, async () => {
      const file = join(root, `archive-${index}.tar.gz`);
      const bytes = archive.bytes();
      if (bytes !== null) await writeFile(file, bytes);
      const destination = join(root, `volume-${index}`);
      await mkdir(destination);

      const verified = await verdictOf(verifyArchive(file));
      const extracted = await verdictOf(extractArchive(file, destination, { maxBytes: null }));

      expect(verified, 'the verifier and the extractor disagree').toEqual(extracted);
      expect(verified === 'ok' ? 'ok' : verified.reason).toBe(archive.verdict);
    });
  }
});

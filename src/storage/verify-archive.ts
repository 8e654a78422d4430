import { createReadStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { ArchiveError, type Progress } from './archive.types.ts';

/**
 * Reads a .tar.gz to its end without writing anything, to prove that it is whole: the gzip
 * data and every tar header must be intact and the archive must not stop mid-entry.
 */
export async function verifyArchive(file: string, onProgress?: (p: Progress) => void): Promise<Progress> {
  const seen: Progress = { files: 0, bytes: 0 };
  let problem: string | undefined;
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      seen.files += 1;
      seen.bytes += entry.size ?? 0;
      onProgress?.(seen);
      entry.resume();
    },
  });
  parser.on('warn', (_code: string, message: string | Error) => {
    problem ??= typeof message === 'string' ? message : message.message;
  });
  // The parser's first error fails the read at once. It is kept here rather than in a promise
  // awaited later: a promise that rejects while nobody awaits it yet is an unhandled rejection,
  // which ends the process (the CLI died with a stack trace on a truncated tar).
  let failure: Error | undefined;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (failure !== undefined) return done(failure);
      if (parser.write(chunk)) done();
      else parser.once('drain', () => done());
    },
    final(done) {
      let settled = false;
      const settle = (err?: Error) => {
        if (settled) return;
        settled = true;
        done(err ?? failure ?? null);
      };
      parser.once('end', () => settle());
      parser.once('error', (err: Error) => settle(err));
      parser.end();
    },
  });
  parser.on('error', (err: Error) => {
    if (failure !== undefined) return;
    failure = err;
    sink.destroy(err);
  });
  try {
    await pipeline(createReadStream(file), createGunzip(), sink);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ArchiveError('not-found', 'the archive file does not exist');
    throw new ArchiveError('corrupt', `the archive is damaged: ${(failure ?? (error as Error)).message}`);
  }
  if (failure !== undefined) throw new ArchiveError('corrupt', `the archive is damaged: ${failure.message}`);
  if (problem !== undefined) throw new ArchiveError('corrupt', `the archive is damaged: ${problem}`);
  return seen;
}

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
    // Not strict: warnings are judged below (an empty archive warns, and is valid).
    onReadEntry: (entry: ReadEntry) => {
      seen.files += 1;
      seen.bytes += entry.size ?? 0;
      onProgress?.(seen);
      entry.resume();
    },
  });
  // As in extraction: an archive of nothing but end-of-archive blocks (or of nothing) is a valid,
  // empty archive, and one without end blocks inside a whole gzip stream is accepted.
  let sawNullBlock = false;
  for (const event of ['nullBlock', 'eof']) parser.on(event, () => (sawNullBlock = true));
  parser.on('warn', (code: string, message: string | Error) => {
    const text = typeof message === 'string' ? message : message.message;
    if (
      code === 'TAR_BAD_ARCHIVE' &&
      seen.files === 0 &&
      sawNullBlock &&
      /unrecognized archive format/i.test(text)
    )
      return;
    problem ??= text;
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

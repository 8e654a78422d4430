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
  const ended = new Promise<void>((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
  });
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (parser.write(chunk)) done();
      else parser.once('drain', () => done());
    },
    final(done) {
      parser.end();
      done();
    },
  });
  try {
    await pipeline(createReadStream(file), createGunzip(), sink);
    await ended;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ArchiveError('not-found', 'the archive file does not exist');
    throw new ArchiveError('corrupt', `the archive is damaged: ${(error as Error).message}`);
  }
  if (problem !== undefined) throw new ArchiveError('corrupt', `the archive is damaged: ${problem}`);
  return seen;
}

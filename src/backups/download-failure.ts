import { PassThrough, type Readable } from 'node:stream';
import { DisplayError } from '../shared/errors.ts';
import { ArchiveError } from '../storage/archive/archive.types.ts';
import { DamagedRepository } from '../storage/repository/tree.ts';

/**
 * A download whose failures say what went wrong. Before its first byte is sent, a failure is
 * still the answer: damaged or unreadable stored data is told as a DisplayError (`what cannot
 * be downloaded: the backup's stored data is damaged: …`), not as an internal error. After the
 * first byte the connection is cut, whatever the error; no reader takes a short body for whole.
 */
export function explainedDownload(source: Readable, what: string): Readable {
  const out = new PassThrough({ highWaterMark: 0 });
  source.on('error', (error) => out.destroy(explained(error, what)));
  out.on('close', () => {
    if (!source.destroyed) source.destroy();
  });
  source.pipe(out);
  return out;
}

function explained(error: Error, what: string): Error {
  if (error instanceof DamagedRepository)
    return new DisplayError(
      `${what} cannot be downloaded: the backup's stored data is damaged: ${error.message}.`,
    );
  if (error instanceof ArchiveError)
    return new DisplayError(`${what} cannot be downloaded: ${error.message}.`);
  return error;
}

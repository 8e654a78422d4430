/** Tar headers as the archive writer writes them (archive-writer.ts): for a download made as it is sent. */
import { Header, Pax } from 'tar';

/**
 * The header block for an entry, preceded by a pax header when a field does not fit ustar:
 * the archive writer's, field for field. `mtimeMs` is cut to the second it falls in.
 */
export function tarHeader(
  tarPath: string,
  type: 'File' | 'Directory',
  mode: number,
  size: number,
  mtimeMs: number,
): Buffer {
  const mtime = new Date(Math.floor(mtimeMs / 1000) * 1000);
  const fields = { path: tarPath, type, mode: mode & 0o7777, size, mtime };
  const header = new Header(fields);
  const needsPax = header.encode();
  if (!header.block) throw new Error(`could not encode the tar header of ${tarPath}`);
  return needsPax ? Buffer.concat([new Pax(fields).encode(), header.block]) : header.block;
}

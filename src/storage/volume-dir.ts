import { existsSync, constants as fsc, type Dirent, type Stats } from 'node:fs';
import { open, opendir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

const DIR_FLAGS = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;
/** Where Linux exposes open descriptors as paths; absent elsewhere (we then fall back to plain paths). */
const PROC_FD = existsSync('/proc/self/fd') ? '/proc/self/fd' : null;

/**
 * A directory of a live volume, held open by descriptor. Its children are addressed through
 * /proc/self/fd/<fd>/<name>, so the kernel resolves exactly one unfollowed component under the
 * directory we already opened, never a path that may have been re-pointed since.
 */
export class VolumeDir {
  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
  ) {}

  /** Opens the volume itself (its path comes from our own configuration, so it is trusted). */
  static async open(dirPath: string): Promise<VolumeDir> {
    return new VolumeDir(await open(dirPath, fsc.O_RDONLY | fsc.O_DIRECTORY), dirPath);
  }

  /** A path to `name` inside this directory that goes through the open descriptor. */
  child(name: string): string {
    return PROC_FD === null ? path.join(this.path, name) : `${PROC_FD}/${this.handle.fd}/${name}`;
  }

  /** Opens a child directory; null if it vanished or is no longer a real directory. */
  async subdirectory(name: string): Promise<VolumeDir | null> {
    try {
      return new VolumeDir(await open(this.child(name), DIR_FLAGS), path.join(this.path, name));
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  /** The directory's entries, streamed (never the whole listing in memory). */
  async *entries(): AsyncGenerator<Dirent> {
    const dir = await opendir(PROC_FD === null ? this.path : `${PROC_FD}/${this.handle.fd}`);
    for await (const entry of dir) yield entry;
  }

  stat(): Promise<Stats> {
    return this.handle.stat();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** True for the errors that mean "that entry changed under us": skip it. */
export function isGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENXIO';
}

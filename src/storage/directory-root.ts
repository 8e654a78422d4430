/**
 * Paths as long as an archive may hold (4096 bytes), under directories whose own paths are long.
 *
 * Linux refuses a path of 4096 bytes or more in a single system call. DirectoryRoot holds a
 * directory we made ourselves (a restore's staging tree) open and addresses paths under it through
 * /proc/self/fd/<fd>/<rel>, so the directory's own path never counts; a path still too long for
 * that is reached by first opening a leading directory of it, one component at a time without
 * following a symlink, and going on from that descriptor. What is left of the path is resolved by
 * the kernel as usual: DirectoryRoot is for trees that hold no symlink we did not put there.
 * removeTreeByDescriptor deletes a tree of any depth, one component at a time (removeTree, rm -rf,
 * falls back on it).
 */
import { existsSync, constants as fsc } from 'node:fs';
import { mkdir, open, readdir, rm, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** Where Linux exposes open descriptors as paths; absent elsewhere (we then use plain paths). */
const PROC_FD = existsSync('/proc/self/fd') ? '/proc/self/fd' : null;
/** Longest path one system call accepts: PATH_MAX (4096) counts the terminating NUL. */
const MAX_SYSCALL_PATH = 4095;
const DIR_FLAGS = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;

export class DirectoryRoot {
  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
  ) {}

  /** Opens a directory whose path comes from our own configuration (so it is trusted). */
  static async open(dir: string): Promise<DirectoryRoot> {
    return new DirectoryRoot(await open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY), path.resolve(dir));
  }

  /**
   * Runs `use` with a path to `rel` ('/'-separated, relative to this directory, '' for itself)
   * that one system call accepts. The path is valid only until `use` settles.
   */
  at<T>(rel: string, use: (target: string) => Promise<T>): Promise<T> {
    return this.reach(rel, null, (base, tail) => use(tail === '' ? base : `${base}/${tail}`));
  }

  /**
   * A path to `rel` that one system call accepts as it is, for synchronous calls; null when the
   * path is too long for that (use `at`, which steps through leading directories).
   */
  direct(rel: string): string | null {
    if (PROC_FD === null) return rel === '' ? this.path : `${this.path}/${rel}`;
    const base = `${PROC_FD}/${this.handle.fd}`;
    if (rel === '') return base;
    return base.length + 1 + Buffer.byteLength(rel) > MAX_SYSCALL_PATH ? null : `${base}/${rel}`;
  }

  /** mkdir -p of `rel`; resolves with the number of directories it created. */
  async makeDirectories(rel: string, mode: number): Promise<number> {
    let made = 0;
    await this.reach(
      rel,
      () => (made += 1),
      async (base, tail) => {
        if (tail === '') return;
        const first = await mkdir(`${base}/${tail}`, { recursive: true, mode });
        if (first !== undefined) made += depth(tail) - depth(path.posix.relative(base, first)) + 1;
      },
      mode,
    );
    return made;
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  /**
   * Calls `use` with a base path (a descriptor's, or this directory's own) and the rest of `rel`
   * under it, short enough together for one system call. When `created` is given, the leading
   * directories stepped through are made as needed (with `mode`), and each one made is counted.
   */
  private async reach<T>(
    rel: string,
    created: (() => void) | null,
    use: (base: string, tail: string) => Promise<T>,
    mode = 0o755,
  ): Promise<T> {
    if (PROC_FD === null) return use(this.path, rel);
    const parts = rel === '' ? [] : rel.split('/');
    let tailBytes = Buffer.byteLength(rel);
    let base = `${PROC_FD}/${this.handle.fd}`;
    let step: FileHandle | null = null;
    try {
      let i = 0;
      while (base.length + 1 + tailBytes > MAX_SYSCALL_PATH) {
        const part = parts[i] ?? '';
        const next = `${base}/${part}`;
        if (created !== null && (await makeDirectory(next, mode))) created();
        const opened = await open(next, DIR_FLAGS);
        await step?.close();
        step = opened;
        base = `${PROC_FD}/${opened.fd}`;
        tailBytes -= Buffer.byteLength(part) + 1;
        i += 1;
      }
      return await use(base, parts.slice(i).join('/'));
    } finally {
      await step?.close();
    }
  }
}

/**
 * rm -rf. fs.rm unlinks symlinks rather than following them. It gives up on a read-only directory
 * (when not running as root) and on a path longer than one system call accepts (a tree restored
 * from a backup may hold paths of 4096 bytes, below a volume's own path); the removal is then
 * finished one directory at a time, through descriptors.
 */
export async function removeTree(target: string): Promise<void> {
  try {
    await rm(target, { recursive: true, force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENAMETOOLONG') throw err;
    await removeTreeByDescriptor(target);
  }
}

/** fsync of a directory: the entries made, renamed or removed in it are on disk. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * rm -rf that reaches every entry through its parent directory's descriptor, one component at a
 * time: no path grows too long, no symlink is followed (even one swapped in while we work), and a
 * read-only directory is made writable for its owner before it is emptied (directories only: a
 * file may be hard-linked into a live volume).
 */
export async function removeTreeByDescriptor(dir: string): Promise<void> {
  const handle = await openDirectory(dir);
  if (handle === null) {
    await unlink(dir).catch(ignoreMissing); // not a directory (or a symlink): just the entry
    return;
  }
  try {
    await emptyDirectory(handle, dir);
  } finally {
    await handle.close();
  }
  await rmdir(dir).catch(ignoreMissing);
}

async function emptyDirectory(handle: FileHandle, dirPath: string): Promise<void> {
  const mode = (await handle.stat()).mode & 0o7777;
  if ((mode & 0o700) !== 0o700) await handle.chmod(mode | 0o700);
  const here = PROC_FD === null ? dirPath : `${PROC_FD}/${handle.fd}`;
  for (const entry of await readdir(here, { withFileTypes: true })) {
    const child = `${here}/${entry.name}`;
    const sub = entry.isDirectory() ? await openDirectory(child) : null;
    if (sub === null) {
      await unlink(child).catch(ignoreMissing);
      continue;
    }
    try {
      await emptyDirectory(sub, path.join(dirPath, entry.name));
    } finally {
      await sub.close();
    }
    await rmdir(child).catch(ignoreMissing);
  }
}

/** Opens a directory without following a symlink; null if it is gone or not a real directory. */
async function openDirectory(target: string): Promise<FileHandle | null> {
  try {
    return await open(target, DIR_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null;
    throw err;
  }
}

function ignoreMissing(err: unknown): void {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
}

/** mkdir of one directory: true if made, false if something was already there. */
async function makeDirectory(target: string, mode: number): Promise<boolean> {
  try {
    await mkdir(target, { mode });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function depth(rel: string): number {
  return rel === '' || rel === '.' ? 0 : rel.split('/').length;
}

/**
 * Whether a directory is a mount point: its own filesystem (a tmpfs, a disk or a network share
 * mounted on it), or a bind mount. A mount point cannot be renamed (EBUSY), nor can a file be
 * renamed or hard-linked across it (EXDEV): a restore onto such a volume swaps its contents
 * rather than the directory itself (restore-files.ts).
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

/** Where Linux lists the mounts this process sees. */
const MOUNTINFO = '/proc/self/mountinfo';

export async function isMountPoint(dir: string): Promise<boolean> {
  const [self, parent] = await Promise.all([stat(dir), stat(path.dirname(dir))]);
  if (self.dev !== parent.dev) return true;
  // A bind mount of a directory on its parent's own filesystem has the parent's device number:
  // only the list of mounts tells it apart.
  return (await mountPoints()).has(await realpath(dir));
}

/**
 * The mount points strictly inside a directory, as paths relative to it. A restore refuses such a
 * volume before any work: the swap would move the mounted filesystem aside with the old tree, and
 * deleting that tree afterwards would delete what the mount holds.
 */
export async function mountsInside(dir: string): Promise<string[]> {
  const root = await realpath(dir);
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return [...(await mountPoints())]
    .filter((point) => point.startsWith(prefix))
    .map((point) => point.slice(prefix.length))
    .sort();
}

/** The mount points listed in /proc/self/mountinfo; none where there is no such file. */
async function mountPoints(): Promise<Set<string>> {
  let text: string;
  try {
    text = await readFile(MOUNTINFO, 'utf8');
  } catch {
    return new Set();
  }
  const points = new Set<string>();
  for (const line of text.split('\n')) {
    // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the fifth field.
    const field = line.split(' ')[4];
    if (field !== undefined) points.add(unescapeOctal(field));
  }
  return points;
}

/** The kernel writes a space, tab, newline and backslash in a path as \040, \011, \012, \134. */
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * One path of a snapshot: found by reading the trees from the root down (one per directory on the
 * way), and a file's content streamed chunk by chunk, each chunk checked against its hash.
 */
import { Readable } from 'node:stream';
import type { Repository } from './repository.ts';
import { DamagedRepository, type FileNode, type TreeNode } from './tree.ts';

/** What `parts` (path components from the root) names in the snapshot whose root tree is `root`; null if nothing. */
export async function findSnapshotPath(
  repository: Repository,
  root: string,
  parts: readonly string[],
): Promise<TreeNode | null> {
  // The root itself: a directory (its mode and time are the volume's, which trees do not keep).
  if (parts.length === 0) return { name: '', type: 'dir', mode: 0o755, mtime: 0, tree: root };
  let tree = root;
  let found: TreeNode | null = null;
  for (const part of parts) {
    if (found !== null && found.type !== 'dir') return null;
    if (found !== null) tree = found.tree;
    const { entries } = await repository.readTree(tree);
    found = entries.find((entry) => entry.name === part) ?? null;
    if (found === null) return null;
  }
  return found;
}

/** A file's content as a stream; it fails with a DamagedRepository when a chunk is damaged or missing. */
export function snapshotFileContent(repository: Repository, file: FileNode): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    let sent = 0;
    for (const id of file.chunks) {
      const chunk = await repository.readBlob(id);
      sent += chunk.length;
      yield chunk;
    }
    if (sent !== file.size)
      throw new DamagedRepository(`the chunks of ${file.name} do not add up to its size`, file.name);
  }
  return Readable.from(chunks(), { objectMode: false });
}

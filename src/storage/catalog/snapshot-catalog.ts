/**
 * A snapshot backup's catalog, from its trees: each directory's tree read once (hashed and checked
 * as every blob read is), in depth-first order, its entries written as the directory's pages.
 */
import type { Repository } from '../repository/repository.ts';
import type { Tree } from '../repository/tree.ts';
import { CatalogWriter, type CatalogEntry, type CatalogSummary } from './backup-catalog.ts';

/** Writes the catalog of the snapshot whose root tree is `root` into `target`. */
export async function catalogSnapshot(
  repository: Repository,
  root: string,
  target: string,
  backup: { id: string; sha256: string | null },
  signal?: AbortSignal,
): Promise<CatalogSummary> {
  const writer = await CatalogWriter.create(target);
  try {
    const pending: { dir: string; tree: string }[] = [{ dir: '/', tree: root }];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      signal?.throwIfAborted();
      const tree: Tree = await repository.readTree(next.tree);
      const entries: CatalogEntry[] = [];
      for (const node of tree.entries) {
        const directory = node.type === 'dir';
        entries.push({
          name: node.name,
          directory,
          mode: node.mode,
          size: directory ? 0 : node.size,
          mtime: node.mtime,
        });
        if (node.type === 'dir') pending.push({ dir: childPath(next.dir, node.name), tree: node.tree });
      }
      await writer.directory(next.dir, entries);
    }
    return await writer.finish(backup.id, backup.sha256);
  } catch (error) {
    await writer.abandon();
    throw error;
  }
}

/** `name` inside directory `dir` (both as the catalog keeps them). */
export function childPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/**
 * A snapshot as the source of a restore: its entries handed to the extraction that restores
 * archives (extract.ts), which writes only files and directories, within the disk budget,
 * never through a symlink. Every path is judged first exactly as an archive entry's is (no `..`,
 * no NUL, no name or path too long, nothing that contradicts an earlier entry): a snapshot's
 * trees come from storage, and storage is not trusted. A chunk that is missing or damaged fails
 * the restore at that file, before anything is swapped in.
 */
import {
  ArchiveError,
  type ExtractLimits,
  type ExtractReport,
  type Progress,
} from '../archive/archive.types.ts';
import { checkEntryPath, EntryPaths } from '../archive/archive-reader.ts';
import { extractEntries, type ExtractEntry } from '../archive/extract.ts';
import type { Repository } from './repository.ts';
import type { RestoredTree } from './restored-tree.ts';
import { readSnapshot } from './snapshot-reader.ts';
import { DamagedRepository } from './tree.ts';

/**
 * Writes the snapshot whose root tree is `treeId` into `destination` (an empty directory), as
 * extractArchive writes an archive. A damaged repository is an ArchiveError `corrupt` naming the
 * file it was found at. `restored`, when given, is told of every entry and of how each file was
 * written.
 */
export async function extractSnapshot(
  repository: Repository,
  treeId: string,
  destination: string,
  limits: ExtractLimits,
  onProgress?: (p: Progress) => void,
  restored?: RestoredTree,
): Promise<ExtractReport> {
  try {
    return await extractEntries(
      async (onEntry, onRead) => {
        const paths = new EntryPaths();
        // Each chunk is written out before the next is asked for: its buffer can be used again.
        for await (const entry of readSnapshot(repository, treeId, {
          reuseBuffers: true,
          ...(limits.only === undefined ? {} : { only: limits.only }),
        })) {
          limits.signal?.throwIfAborted();
          const rel = checkEntryPath(entry.rel);
          if (rel !== entry.rel || rel === '')
            throw new ArchiveError('unsafe-path', `the snapshot holds an unusable path`, entry.rel);
          const { node } = entry;
          await restored?.entered(rel, node);
          if (node.type === 'dir') paths.directory(rel);
          else paths.file(rel);
          const mtime = new Date(node.mtime);
          const extractEntry: ExtractEntry = {
            rel,
            kind: node.type === 'dir' ? 'directory' : 'file',
            size: node.type === 'file' ? node.size : 0,
            mode: node.mode,
            mtime,
            atime: mtime,
            readBody: async (onChunk) => {
              for await (const chunk of entry.content()) {
                onRead(chunk.length);
                await onChunk(chunk);
              }
            },
            discard: () => undefined,
            ...(restored !== undefined && node.type === 'file'
              ? { written: (inode: number, mtime: number) => restored.written(node, inode, mtime) }
              : {}),
          };
          await onEntry(extractEntry);
        }
      },
      destination,
      limits,
      onProgress,
    );
  } catch (error) {
    if (error instanceof DamagedRepository) {
      throw new ArchiveError('corrupt', `the backup's stored data is damaged: ${error.message}`);
    }
    throw error;
  }
}

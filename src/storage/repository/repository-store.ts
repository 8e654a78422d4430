/**
 * Where a snapshot repository's objects live: files under a directory, or objects under a key
 * prefix in an S3-compatible bucket (s3-repository-store.ts). The repository never changes an
 * object once written: it only adds whole objects and deletes them, so every store needs only
 * these few operations, and an object is either there complete or not there at all.
 *
 * Keys are `/`-separated: `packs/<2 hex>/<pack id>`, `index/<id>`, `snapshots/<backup uuid>`,
 * `locks/…` (repository.ts says what each holds).
 */
import { randomBytes } from 'node:crypto';
import { constants as fsc, readSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { answersRequests } from '../../shared/request-thread.ts';
import { syncDirectory } from '../directory-root.ts';
import { isGone } from '../volume-dir.ts';

export interface StoredObject {
  key: string;
  bytes: number;
  modifiedAt: Date;
}

export interface RepositoryStore {
  /** What the store is, for messages: a directory, or `s3://bucket/prefix`. */
  readonly where: string;
  /**
   * How many packs a writer puts at once (two unless set): a local disk takes one write at a
   * time as fast as two, and each pack waiting to be put is memory held.
   */
  readonly concurrentPuts?: number;
  /**
   * What a writer collects after each pack put (the whole heap unless set): a local write leaves
   * only the pack's views as garbage, young; an S3 upload's request state lives longer.
   */
  readonly collectAfterPut?: 'young' | 'all';
  /**
   * A writer fills packs only while one of its puts is free (unless set, a sealed pack may wait
   * behind those being put): a put here is a request that lasts longer than filling a pack takes
   * (S3), so a pack queued behind the puts would only hold its memory longer.
   */
  readonly writerWaitsForPuts?: boolean;
  /**
   * Each read is a request with a round trip of its own (S3): a reader that can asks for a run
   * of blobs that lie one after another at once (Repository.readBlobRun), rather than for each.
   */
  readonly readsAreRequests?: boolean;
  /** Writes a whole object, made visible only once complete (a crash leaves it absent). */
  put(key: string, parts: readonly Uint8Array[]): Promise<void>;
  /** The whole object; a RepositoryMissing error when it is not there. */
  get(key: string): Promise<Buffer>;
  /** `length` bytes of the object from `offset`. */
  getRange(key: string, offset: number, length: number): Promise<Buffer>;
  /**
   * Bytes of the object from `offset` into `target`, as many as it holds (fewer only where the
   * object ends first): how many were read.
   */
  getRangeInto(key: string, offset: number, target: Uint8Array): Promise<number>;
  /** Every object whose key starts with `prefix` (`packs/`, `index/`, `snapshots/`). */
  list(prefix: string): Promise<StoredObject[]>;
  /** Removes the object; one already gone counts as removed. */
  delete(key: string): Promise<void>;
  /**
   * Makes the objects put so far durable as a set (a local store syncs the directories they
   * were named in; an S3 store has nothing to do): called before a snapshot that needs them is
   * written.
   */
  sync(): Promise<void>;
  /** Releases what the store holds open (file descriptors). */
  close(): Promise<void>;
}

/** An object the repository expected is not in its store. */
export class RepositoryMissing extends Error {
  constructor(readonly key: string) {
    super(`${key} is missing from the backup repository`);
    this.name = 'RepositoryMissing';
  }
}

/** How many pack files a local store keeps open for range reads at once. */
const OPEN_FILES = 32;

/** A repository in a local directory: each object a file named by its key. */
export class LocalRepositoryStore implements RepositoryStore {
  private readonly handles = new Map<string, Promise<FileHandle>>();
  private readonly made = new Set<string>();
  private readonly unsynced = new Set<string>();
  readonly concurrentPuts: number = 1;
  readonly collectAfterPut = 'young';

  constructor(readonly root: string) {}

  get where(): string {
    return this.root;
  }

  private fileOf(key: string): string {
    return path.join(this.root, ...key.split('/'));
  }

  /**
   * Written to a temporary name beside the object, synced, then renamed: an object is on disk
   * whole before its name appears. The directory itself is synced by `sync` once a backup's
   * writes are done (one sync a directory, not one a file).
   */
  async put(key: string, parts: readonly Uint8Array[]): Promise<void> {
    const target = this.fileOf(key);
    const dir = path.dirname(target);
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true, mode: 0o750 });
      this.made.add(dir);
    }
    const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    const handle = await open(temporary, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o640);
    try {
      await handle.writev(parts as Uint8Array[]);
      await handle.datasync();
    } catch (error) {
      await handle.close();
      await rm(temporary, { force: true });
      throw error;
    }
    await handle.close();
    await rename(temporary, target);
    this.unsynced.add(dir);
  }

  async sync(): Promise<void> {
    const dirs = [...this.unsynced];
    this.unsynced.clear();
    await Promise.all(dirs.map((dir) => syncDirectory(dir)));
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await readFile(this.fileOf(key));
    } catch (error) {
      if (isGone(error)) throw new RepositoryMissing(key);
      throw error;
    }
  }

  async getRange(key: string, offset: number, length: number): Promise<Buffer> {
    const buffer = Buffer.allocUnsafe(length);
    const done = await this.getRangeInto(key, offset, buffer);
    return done === length ? buffer : buffer.subarray(0, done);
  }

  /**
   * In a worker thread (a restore's, an extract's) the read is a synchronous call: it holds up
   * only that thread, and spares the round trip through libuv's pool, which cost as much as the
   * read itself for the chunks of a restore. A thread that answers requests reads on the pool.
   */
  async getRangeInto(key: string, offset: number, target: Uint8Array): Promise<number> {
    const handle = await this.handleOf(key);
    let done = 0;
    while (done < target.length) {
      const bytesRead = answersRequests()
        ? (await handle.read(target, done, target.length - done, offset + done)).bytesRead
        : readSync(handle.fd, target, done, target.length - done, offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done;
  }

  private handleOf(key: string): Promise<FileHandle> {
    let handle = this.handles.get(key);
    if (handle === undefined) {
      if (this.handles.size >= OPEN_FILES) {
        const [oldest, opened] = this.handles.entries().next().value!;
        this.handles.delete(oldest);
        void opened.then((h) => h.close()).catch(() => undefined);
      }
      handle = open(this.fileOf(key), fsc.O_RDONLY).catch((error: unknown) => {
        this.handles.delete(key);
        throw isGone(error) ? new RepositoryMissing(key) : error;
      });
      this.handles.set(key, handle);
    }
    return handle;
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    const walk = async (dir: string, keyPrefix: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if (isGone(error)) return;
        throw error;
      }
      for (const entry of entries) {
        const key = keyPrefix + entry.name;
        if (entry.isDirectory()) await walk(path.join(dir, entry.name), `${key}/`);
        else if (entry.isFile() && !entry.name.endsWith('.tmp')) {
          const stats = await stat(path.join(dir, entry.name)).catch(() => null);
          if (stats !== null) found.push({ key, bytes: stats.size, modifiedAt: stats.mtime });
        }
      }
    };
    const base = prefix.replace(/\/$/, '');
    await walk(this.fileOf(base), `${base}/`);
    return found;
  }

  async delete(key: string): Promise<void> {
    const opened = this.handles.get(key);
    if (opened !== undefined) {
      this.handles.delete(key);
      await opened.then((h) => h.close()).catch(() => undefined);
    }
    await rm(this.fileOf(key), { force: true });
  }

  /** Temporary files a writer killed mid-object left (`.tmp`), older than `before`. */
  async leftovers(before: Date): Promise<string[]> {
    const found: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const entry of entries) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (entry.name.endsWith('.tmp')) {
          const stats = await stat(full).catch(() => null);
          if (stats !== null && stats.mtime < before) found.push(full);
        }
      }
    };
    await walk(this.root);
    return found;
  }

  async close(): Promise<void> {
    const opened = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(opened.map((h) => h.then((handle) => handle.close()).catch(() => undefined)));
  }
}

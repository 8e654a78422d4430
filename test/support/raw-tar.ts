/**
 * A deliberately naive tar writer for tests: it writes exactly what it is told, including things
 * that well-behaved archivers refuse to produce (`..` components, absolute names, links that point
 * out of the tree, devices, bad checksums, lying sizes). Used to craft hostile backups for the
 * extraction and restore code.
 *
 * Layout written (POSIX ustar, 512-byte blocks):
 *   [PAX 'x' header + records]? header content-padded-to-512 ... two zero blocks
 */
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';

export const BLOCK = 512;

/**
 * '0' regular file, '1' hard link, '2' symlink, '3' character device, '4' block device,
 * '5' directory, '6' FIFO, 'x' PAX extended header (next entry), 'g' PAX global header.
 * Any other single character is written as-is.
 */
export type TypeFlag = '0' | '1' | '2' | '3' | '4' | '5' | '6' | 'x' | 'g' | (string & {});

export interface RawEntry {
  /** Entry path exactly as it should appear to a reader (after PAX/prefix are applied). */
  path: string;
  /** Defaults to '5' when `path` ends with '/', else '0'. */
  type?: TypeFlag;
  /** File content; written after the header and padded to a whole block. */
  content?: Buffer | string;
  /** Size declared in the header; defaults to the content length. Lie here to fake truncation. */
  size?: number;
  /** Defaults to 0o755 for directories, 0o644 otherwise. May carry setuid/setgid/sticky bits. */
  mode?: number;
  uid?: number;
  gid?: number;
  uname?: string;
  gname?: string;
  /** Seconds since the epoch; defaults to a fixed date so archives are reproducible. */
  mtime?: number;
  /** Target of a hard link ('1') or symlink ('2'). */
  linkname?: string;
  devmajor?: number;
  devminor?: number;
  /**
   * How to store a path that does not fit the 100-byte name field:
   * 'auto' (default) splits into prefix/name when possible, else uses PAX;
   * 'pax' always emits a PAX `path` record when the path is longer than 100 bytes;
   * 'raw' writes the first 100 bytes of the path and ignores the rest.
   */
  longPath?: 'auto' | 'pax' | 'raw';
  /**
   * Explicit ustar prefix field. When set, `path` goes verbatim into the name field and the
   * reader is expected to see `${prefix}/${path}`.
   */
  prefix?: string;
  /** Extra PAX records, written in an 'x' header in front of this entry. */
  pax?: Record<string, string>;
  /** Name written in the name field of the header itself when PAX carries the real path. */
  nameField?: string;
  /** 'valid' (default), 'wrong' (off by one), or an explicit number to store. */
  checksum?: 'valid' | 'wrong' | number;
}

export interface RawTarOptions {
  /** Zero blocks written at the end; default 2 (the standard end-of-archive marker). */
  endBlocks?: number;
}

export interface TarGzOptions extends RawTarOptions {
  /** Cut the uncompressed tar to this many bytes before compressing (a truncated archive). */
  truncateTarAt?: number;
  /** Cut the compressed bytes to this many bytes (a gzip stream cut short). */
  truncateGzipAt?: number;
  /** gzip level, default 6. */
  level?: number;
}

const encoder = new TextEncoder();

function bytes(s: string): Buffer {
  return Buffer.from(encoder.encode(s));
}

function writeString(block: Buffer, offset: number, length: number, value: string): void {
  const b = bytes(value);
  b.copy(block, offset, 0, Math.min(b.length, length));
}

/** Octal number, zero-padded to `length - 1` digits, NUL-terminated. */
function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  const digits = Math.trunc(value).toString(8);
  if (digits.length > length - 1) {
    throw new RangeError(`value ${value} does not fit a ${length}-byte octal field`);
  }
  writeString(block, offset, length, digits.padStart(length - 1, '0') + '\0');
}

/** Splits a long path into (prefix, name) at a '/', or returns null if no split fits. */
function splitUstar(path: string): { prefix: string; name: string } | null {
  const b = bytes(path);
  for (let i = b.length - 1; i > 0; i--) {
    if (b[i] !== 0x2f) continue;
    const prefix = b.subarray(0, i);
    const name = b.subarray(i + 1);
    if (prefix.length <= 155 && name.length <= 100 && name.length > 0) {
      return { prefix: prefix.toString('utf8'), name: name.toString('utf8') };
    }
  }
  return null;
}

/** One PAX record: "<len> <key>=<value>\n" where <len> counts the whole record, itself included. */
export function paxRecord(key: string, value: string): Buffer {
  const body = bytes(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([bytes(String(len)), body]);
}

export function checksumOf(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) {
    sum += i >= 148 && i < 156 ? 0x20 : (header[i] ?? 0);
  }
  return sum;
}

interface HeaderFields {
  name: string;
  prefix: string;
  type: string;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  uname: string;
  gname: string;
  mtime: number;
  linkname: string;
  devmajor: number;
  devminor: number;
  checksum: 'valid' | 'wrong' | number;
}

function header(f: HeaderFields): Buffer {
  const h = Buffer.alloc(BLOCK);
  writeString(h, 0, 100, f.name);
  writeOctal(h, 100, 8, f.mode);
  writeOctal(h, 108, 8, f.uid);
  writeOctal(h, 116, 8, f.gid);
  writeOctal(h, 124, 12, f.size);
  writeOctal(h, 136, 12, f.mtime);
  writeString(h, 148, 8, '        ');
  writeString(h, 156, 1, f.type);
  writeString(h, 157, 100, f.linkname);
  writeString(h, 257, 6, 'ustar\0');
  writeString(h, 263, 2, '00');
  writeString(h, 265, 32, f.uname);
  writeString(h, 297, 32, f.gname);
  writeOctal(h, 329, 8, f.devmajor);
  writeOctal(h, 337, 8, f.devminor);
  writeString(h, 345, 155, f.prefix);
  const valid = checksumOf(h);
  const stored = f.checksum === 'valid' ? valid : f.checksum === 'wrong' ? valid + 1 : f.checksum;
  // Conventional form: six octal digits, NUL, space.
  writeString(h, 148, 8, stored.toString(8).padStart(6, '0') + '\0 ');
  return h;
}

export function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

/**
 * The header block(s) for one entry: an optional PAX 'x' header with its records, then the
 * entry's own ustar header. Content is not included (see `rawTar`, or stream it yourself).
 */
export function entryHeader(entry: RawEntry): Buffer {
  const type = entry.type ?? (entry.path.endsWith('/') ? '5' : '0');
  const content = entry.content === undefined ? Buffer.alloc(0) : Buffer.from(entry.content);
  const size = entry.size ?? content.length;
  const isDir = type === '5';

  const pax: Record<string, string> = { ...(entry.pax ?? {}) };
  let name = entry.path;
  let prefix = entry.prefix ?? '';
  if (entry.prefix === undefined && bytes(entry.path).length > 100) {
    const mode = entry.longPath ?? 'auto';
    const split = mode === 'auto' ? splitUstar(entry.path) : null;
    if (split !== null) {
      ({ name, prefix } = split);
    } else if (mode === 'raw') {
      name = bytes(entry.path).subarray(0, 100).toString('utf8');
    } else {
      pax.path = entry.path;
      name = entry.nameField ?? bytes(entry.path).subarray(0, 100).toString('utf8');
    }
  } else if (entry.nameField !== undefined) {
    name = entry.nameField;
  }
  const linkname = entry.linkname ?? '';
  if (bytes(linkname).length > 100 && pax.linkpath === undefined) pax.linkpath = linkname;

  const common = {
    uid: entry.uid ?? 1000,
    gid: entry.gid ?? 1000,
    uname: entry.uname ?? 'aerie',
    gname: entry.gname ?? 'aerie',
    mtime: entry.mtime ?? 1_700_000_000,
    devmajor: entry.devmajor ?? 0,
    devminor: entry.devminor ?? 0,
  };

  const parts: Buffer[] = [];
  const keys = Object.keys(pax);
  if (keys.length > 0) {
    const records = Buffer.concat(keys.map((k) => paxRecord(k, pax[k] ?? '')));
    parts.push(
      header({
        ...common,
        name: 'PaxHeader/' + bytes(name).subarray(0, 80).toString('utf8'),
        prefix: '',
        type: 'x',
        size: records.length,
        mode: 0o644,
        linkname: '',
        checksum: 'valid',
      }),
      records,
      padding(records.length),
    );
  }
  parts.push(
    header({
      ...common,
      name,
      prefix,
      type,
      size,
      mode: entry.mode ?? (isDir ? 0o755 : type === '2' ? 0o777 : 0o644),
      linkname: bytes(linkname).subarray(0, 100).toString('utf8'),
      checksum: entry.checksum ?? 'valid',
    }),
  );
  return Buffer.concat(parts);
}

/** An uncompressed tar archive holding exactly these entries. */
export function rawTar(entries: readonly RawEntry[], opts: RawTarOptions = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    parts.push(entryHeader(entry));
    if (entry.content !== undefined) {
      const content = Buffer.from(entry.content);
      parts.push(content, padding(content.length));
    }
  }
  parts.push(Buffer.alloc(BLOCK * (opts.endBlocks ?? 2)));
  return Buffer.concat(parts);
}

/** gzip-compressed `rawTar`, optionally truncated before or after compression. */
export function rawTarGz(entries: readonly RawEntry[], opts: TarGzOptions = {}): Buffer {
  let tar = rawTar(entries, opts);
  if (opts.truncateTarAt !== undefined) tar = tar.subarray(0, opts.truncateTarAt);
  let gz = gzipSync(tar, { level: opts.level ?? 6 });
  if (opts.truncateGzipAt !== undefined) gz = gz.subarray(0, opts.truncateGzipAt);
  return gz;
}

export async function writeTarGz(
  file: string,
  entries: readonly RawEntry[],
  opts: TarGzOptions = {},
): Promise<void> {
  await writeFile(file, rawTarGz(entries, opts));
}

/**
 * Streams a .tar.gz holding `before` (small entries, written as by `rawTar`) and then one regular
 * file of `size` zero bytes, without ever holding that content in memory: a compression bomb
 * (1 GiB of zeros compresses to about 1 MiB).
 */
export async function writeZeroFileTarGz(
  file: string,
  path: string,
  size: number,
  opts: { before?: readonly RawEntry[]; level?: number } = {},
): Promise<void> {
  const chunk = Buffer.alloc(1 << 20);
  const before = opts.before ?? [];
  function* blocks(): Generator<Buffer> {
    if (before.length > 0) yield rawTar(before, { endBlocks: 0 });
    yield entryHeader({ path, size });
    let left = size;
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      yield n === chunk.length ? chunk : chunk.subarray(0, n);
      left -= n;
    }
    yield padding(size);
    yield Buffer.alloc(BLOCK * 2);
  }
  await pipeline(Readable.from(blocks()), createGzip({ level: opts.level ?? 9 }), createWriteStream(file));
}

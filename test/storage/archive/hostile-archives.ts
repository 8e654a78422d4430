/**
 * Every hostile or malformed backup the storage tests use, as bytes, with the verdict Aerie gives
 * it: `'ok'` (the archive is valid: it imports and restores) or the `ArchiveError` reason it fails
 * with. The verifier (`aerie backup import`) and the extractor (a restore) must both reach exactly
 * this verdict, with the same message (test/storage/archive/archive-agreement.test.ts).
 *
 * Failures that depend on where an archive is restored (the disk limit, a symlink already in the
 * destination) are not here: they are not properties of the archive.
 */
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { ArchiveFailure } from '../../../src/storage/archive/archive.types.ts';
import { BLOCK, rawTar, rawTarGz, type RawEntry } from '../../support/raw-tar.ts';

export interface HostileArchive {
  name: string;
  /** The archive file's bytes; null for a file that does not exist. */
  bytes: () => Buffer | null;
  verdict: 'ok' | ArchiveFailure;
}

const KiB = 1024;
const MiB = 1024 * KiB;

const ordinary: RawEntry[] = [
  { path: 'server.properties', content: 'motd=hello\n' },
  { path: 'world/', type: '5' },
  { path: 'world/level.dat', content: randomBytes(3 * KiB) },
];

/** `bytes` bytes of path in components of at most 250 bytes. */
export function deepPath(bytes: number): string {
  const parts: string[] = [];
  let length = 0;
  while (length + 252 < bytes) {
    parts.push(String(parts.length).padEnd(250, 'd'));
    length += 251;
  }
  parts.push('f'.padEnd(bytes - length, 'f'));
  return parts.join('/');
}

/**
 * A zstd frame holding `data` in raw (stored) blocks: real zstd, written by hand so the tests need
 * neither a zstd binary nor a Node.js with zstd in zlib.
 */
export function zstdFrame(data: Buffer): Buffer {
  const MAX_BLOCK = 128 * KiB;
  // Magic, frame header descriptor (no content size, no checksum), window descriptor (128 KiB).
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38])];
  let offset = 0;
  do {
    const size = Math.min(MAX_BLOCK, data.length - offset);
    const last = offset + size >= data.length ? 1 : 0;
    const header = (size << 3) | last; // block type 0: raw
    parts.push(Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]));
    parts.push(data.subarray(offset, offset + size));
    offset += size;
  } while (offset < data.length);
  return Buffer.concat(parts);
}

const gz = (entries: RawEntry[]) => () => rawTarGz(entries);

export const hostileArchives: HostileArchive[] = [
  // Valid archives, some of them odd.
  { name: 'an ordinary archive', bytes: gz(ordinary), verdict: 'ok' },
  { name: 'an empty gzip stream (a tar of no bytes)', bytes: () => gzipSync(Buffer.alloc(0)), verdict: 'ok' },
  { name: 'a tar of end blocks only', bytes: () => gzipSync(Buffer.alloc(2 * BLOCK)), verdict: 'ok' },
  { name: 'a tar of one end block', bytes: () => gzipSync(Buffer.alloc(BLOCK)), verdict: 'ok' },
  { name: 'a tar padded to 10 KiB of zeros', bytes: () => gzipSync(Buffer.alloc(10 * KiB)), verdict: 'ok' },
  {
    name: 'a tar without end blocks',
    bytes: () => gzipSync(rawTar(ordinary, { endBlocks: 0 })),
    verdict: 'ok',
  },
  {
    name: 'bytes after the end blocks',
    bytes: () => gzipSync(Buffer.concat([rawTar(ordinary), Buffer.from('trailing '.repeat(100))])),
    verdict: 'ok',
  },
  {
    name: 'a tar in two gzip members',
    bytes: () =>
      Buffer.concat([
        gzipSync(rawTar(ordinary, { endBlocks: 0 })),
        gzipSync(rawTar([{ path: 'z', content: 'z' }])),
      ]),
    verdict: 'ok',
  },
  {
    name: 'absolute, ./ and doubled-slash paths',
    bytes: gz([
      { path: '/etc/passwd', content: 'inside the volume\n' },
      { path: './deep/er/file.txt', content: 'x' },
      { path: '///triple/t.txt', content: 'y' },
      { path: 'a//b/./c.txt', content: 'z' },
    ]),
    verdict: 'ok',
  },
  {
    name: 'links, devices, a FIFO and an unknown type (all skipped)',
    bytes: gz([
      { path: 'passwd-link', type: '2', linkname: '/etc/passwd' },
      { path: 'up-link', type: '2', linkname: '../../outside/file.txt' },
      { path: 'hard', type: '1', linkname: '/etc/passwd' },
      { path: 'null', type: '3', devmajor: 1, devminor: 3 },
      { path: 'sda', type: '4', devmajor: 8, devminor: 0 },
      { path: 'pipe', type: '6' },
      { path: 'sparse', type: 'S' },
      { path: 'kept.txt', content: 'kept' },
    ]),
    verdict: 'ok',
  },
  {
    name: 'the two-step symlink attack (evil -> outside, then evil/pwned.txt)',
    bytes: gz([
      { path: 'evil', type: '2', linkname: '/tmp' },
      { path: 'evil/pwned.txt', content: 'pwned\n' },
    ]),
    verdict: 'ok',
  },
  {
    name: 'a hard link, then a file of the same name',
    bytes: gz([
      { path: 'hl', type: '1', linkname: '/etc/shadow' },
      { path: 'hl', content: 'pwned\n' },
    ]),
    verdict: 'ok',
  },
  {
    name: 'a later copy of a file',
    bytes: gz([
      { path: 'dup.txt', content: 'first' },
      { path: 'dup.txt', content: 'second' },
    ]),
    verdict: 'ok',
  },
  {
    name: 'a file under a skipped symlink of the same name as a file',
    bytes: gz([
      { path: 'a', content: 'file' },
      { path: 'a/b', type: '2', linkname: 'x' },
    ]),
    verdict: 'ok',
  },
  { name: 'a path of 4,096 bytes', bytes: gz([{ path: deepPath(4096), content: 'x' }]), verdict: 'ok' },
  {
    name: 'setuid, setgid and sticky modes',
    bytes: gz([
      { path: 'bin/', type: '5', mode: 0o3775 },
      { path: 'bin/suid', content: '#!/bin/sh\n', mode: 0o6777 },
    ]),
    verdict: 'ok',
  },

  // Paths that leave the volume.
  {
    name: 'a leading .. component',
    bytes: gz([{ path: '../escape.txt', content: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. in the middle',
    bytes: gz([
      { path: 'sub/', type: '5' },
      { path: 'sub/../../../outside/mid.txt', content: 'x' },
    ]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. that lands back inside',
    bytes: gz([{ path: 'a/../in.txt', content: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. in the ustar prefix field',
    bytes: gz([{ path: 'prefixed.txt', prefix: '../../outside', content: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. in a PAX path behind an innocent name',
    bytes: gz([{ path: 'innocent.txt', pax: { path: '../../outside/pax.txt' }, content: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. in a GNU long-name record',
    bytes: gz([
      { path: '././@LongLink', type: 'L', content: '../../outside/gnu.txt\0' },
      { path: 'short.txt', content: 'x' },
    ]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a directory that climbs out',
    bytes: gz([{ path: '../../outside/new/', type: '5' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. in a symlink that would be skipped',
    bytes: gz([{ path: '../l', type: '2', linkname: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a .. after valid entries',
    bytes: gz([...ordinary, { path: '../../outside/escape.txt', content: 'x' }]),
    verdict: 'unsafe-path',
  },
  {
    name: 'a long path with a .. component',
    bytes: gz([{ path: `${deepPath(4000)}/../x`, content: 'x' }]),
    verdict: 'unsafe-path',
  },

  // Names too long.
  {
    name: 'a component of 256 bytes',
    bytes: gz([{ path: 'n'.repeat(256), content: 'x' }]),
    verdict: 'name-too-long',
  },
  {
    name: 'a path of 4,097 bytes',
    bytes: gz([{ path: deepPath(4097), content: 'x' }]),
    verdict: 'name-too-long',
  },
  {
    name: 'a directory path of 5,000 bytes',
    bytes: gz([{ path: `${deepPath(5000)}/`, type: '5' }]),
    verdict: 'name-too-long',
  },
  {
    name: 'an extended header over 1 MiB',
    bytes: gz([{ path: 'p', pax: { comment: 'c'.repeat(MiB + 1) }, content: 'x' }]),
    verdict: 'name-too-long',
  },

  // An archive that contradicts itself.
  {
    name: 'a file under a file',
    bytes: gz([
      { path: 'a', content: 'file' },
      { path: 'a/b', content: 'under' },
    ]),
    verdict: 'conflict',
  },
  {
    name: 'a deeper path under a file',
    bytes: gz([
      { path: 'dir/', type: '5' },
      { path: 'dir/a', content: 'file' },
      { path: 'dir/a/b/c.txt', content: 'under' },
    ]),
    verdict: 'conflict',
  },
  {
    name: 'a file over a directory',
    bytes: gz([{ path: 'd/' }, { path: 'd', content: 'file' }]),
    verdict: 'conflict',
  },
  {
    name: 'a file over a directory made for an earlier file',
    bytes: gz([
      { path: 'd/x', content: 'x' },
      { path: 'd', content: 'file' },
    ]),
    verdict: 'conflict',
  },
  {
    name: 'a directory over a file',
    bytes: gz([{ path: 'f', content: 'file' }, { path: 'f/' }]),
    verdict: 'conflict',
  },
  {
    name: 'a directory under a file',
    bytes: gz([{ path: 'f', content: 'file' }, { path: 'f/sub/' }]),
    verdict: 'conflict',
  },
  {
    name: 'a path under a file, after valid entries',
    bytes: gz([...ordinary, { path: 'a', content: 'file\n' }, { path: 'a/b', content: 'under\n' }]),
    verdict: 'conflict',
  },
  {
    name: 'a long path under a file',
    bytes: gz([
      { path: deepPath(3000), content: 'file' },
      { path: `${deepPath(3000)}/under`, content: 'x' },
    ]),
    verdict: 'conflict',
  },

  // Damaged, truncated or not a gzip-compressed tar.
  {
    name: 'a gzip stream cut short',
    bytes: () => {
      const whole = rawTarGz([...ordinary, { path: 'big.bin', content: randomBytes(128 * KiB) }]);
      return whole.subarray(0, Math.floor(whole.length * 0.6));
    },
    verdict: 'corrupt',
  },
  {
    name: 'a tar that ends inside an entry',
    bytes: () =>
      rawTarGz([{ path: 'big.bin', content: randomBytes(100 * KiB) }], { truncateTarAt: BLOCK + 40 * KiB }),
    verdict: 'corrupt',
  },
  {
    name: 'a tar that ends inside a header',
    bytes: () => rawTarGz(ordinary, { truncateTarAt: 300 }),
    verdict: 'corrupt',
  },
  {
    name: 'a tar that ends inside a PAX header',
    bytes: () => rawTarGz([{ path: 'p'.repeat(300), content: 'x' }], { truncateTarAt: BLOCK + 100 }),
    verdict: 'corrupt',
  },
  {
    name: 'a first header with a wrong checksum',
    bytes: gz([{ path: 'bad.txt', content: 'bad\n', checksum: 'wrong' }]),
    verdict: 'corrupt',
  },
  {
    name: 'a header with a wrong checksum in the middle',
    bytes: gz([
      { path: 'good.txt', content: 'good\n' },
      { path: 'bad.txt', content: 'bad\n', checksum: 'wrong' },
      { path: 'later.txt', content: 'later\n' },
    ]),
    verdict: 'corrupt',
  },
  {
    name: 'an entry whose size runs past the end',
    bytes: gz([{ path: 'liar.txt', content: 'short', size: 10 * KiB }]),
    verdict: 'corrupt',
  },
  {
    name: 'less than one block of zeros',
    bytes: () => gzipSync(Buffer.alloc(100)),
    verdict: 'corrupt',
  },
  { name: 'gzip around random bytes', bytes: () => gzipSync(randomBytes(64 * KiB)), verdict: 'corrupt' },
  { name: 'random bytes', bytes: () => randomBytes(64 * KiB), verdict: 'corrupt' },
  { name: 'an empty file', bytes: () => Buffer.alloc(0), verdict: 'corrupt' },
  {
    name: 'bytes after the gzip stream',
    bytes: () => Buffer.concat([rawTarGz(ordinary), Buffer.from('not gzip')]),
    verdict: 'corrupt',
  },
  { name: 'an uncompressed tar', bytes: () => rawTar(ordinary), verdict: 'corrupt' },
  { name: 'a zstd-compressed tar', bytes: () => zstdFrame(rawTar(ordinary)), verdict: 'corrupt' },
  { name: 'a brotli-compressed tar', bytes: () => brotliCompressSync(rawTar(ordinary)), verdict: 'corrupt' },
  { name: 'a tar compressed twice with gzip', bytes: () => gzipSync(rawTarGz(ordinary)), verdict: 'corrupt' },
  {
    name: 'a zstd-compressed tar inside gzip',
    bytes: () => gzipSync(zstdFrame(rawTar(ordinary))),
    verdict: 'corrupt',
  },
  {
    name: 'a brotli-compressed tar inside gzip',
    bytes: () => gzipSync(brotliCompressSync(rawTar(ordinary))),
    verdict: 'corrupt',
  },

  { name: 'a file that does not exist', bytes: () => null, verdict: 'not-found' },
];

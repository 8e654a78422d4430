/**
 * Tree blobs come from storage that an attacker may have written to: `decodeTree` refuses any
 * tree that is not one Aerie could have written, with a DamagedRepository naming the tree.
 */
import { describe, expect, it } from 'vitest';
import { compareNames } from '../../../src/shared/compare-names.ts';
import {
  byName,
  DamagedRepository,
  decodeTree,
  encodeTree,
  type Tree,
  type TreeNode,
} from '../../../src/storage/repository/tree.ts';

const TREE_ID = 'a'.repeat(64);
const CHUNK = 'b'.repeat(64);
const SUBTREE = 'c'.repeat(64);

function file(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    type: 'file',
    mode: 0o644,
    mtime: 1_700_000_000_123.456,
    size: 5,
    inode: 42,
    chunks: [CHUNK],
    ...extra,
  };
}

function dir(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, type: 'dir', mode: 0o755, mtime: 1_700_000_000_000, tree: SUBTREE, ...extra };
}

function bytesOf(entries: unknown[]): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, entries }));
}

function refusal(bytes: Buffer): DamagedRepository {
  try {
    decodeTree(TREE_ID, bytes);
  } catch (error) {
    expect(error).toBeInstanceOf(DamagedRepository);
    const damaged = error as DamagedRepository;
    expect(damaged.object).toBe(TREE_ID);
    expect(damaged.message).toContain(`tree ${TREE_ID} is damaged`);
    return damaged;
  }
  throw new Error('the tree was accepted');
}

describe('decodeTree', () => {
  it('reads back what encodeTree wrote', () => {
    const tree: Tree = {
      entries: [
        dir('A') as unknown as TreeNode,
        file('a.txt') as unknown as TreeNode,
        file('empty', { size: 0, chunks: [] }) as unknown as TreeNode,
        dir('world') as unknown as TreeNode,
        file('é.txt', { mode: 0o7777 }) as unknown as TreeNode,
        file('x'.repeat(255)) as unknown as TreeNode,
      ].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name))),
    };
    expect(decodeTree(TREE_ID, encodeTree(tree))).toEqual(tree);
    expect(decodeTree(TREE_ID, encodeTree({ entries: [] }))).toEqual({ entries: [] });
  });

  it.each([
    ['..', '..'],
    ['.', '.'],
    ['a name with a slash', 'a/b'],
    ['a name that is a path', '/etc'],
    ['a NUL', 'a\0b'],
    ['an empty name', ''],
    ['a 256-byte name', 'x'.repeat(256)],
    ['a 256-byte name of 2-byte characters', 'é'.repeat(128)],
  ])('refuses %s as a name', (_what, name) => {
    expect(refusal(bytesOf([file(name)])).message).toContain('unusable name');
    expect(refusal(bytesOf([dir(name)])).message).toContain('unusable name');
  });

  it('refuses a name that is no string', () => {
    refusal(bytesOf([file('a', { name: 5 })]));
    refusal(bytesOf([file('a', { name: null })]));
    refusal(bytesOf([null]));
    refusal(bytesOf(['a']));
  });

  it('refuses entries out of order, and repeated names', () => {
    expect(refusal(bytesOf([file('b'), file('a')])).message).toContain('not sorted');
    expect(refusal(bytesOf([file('a'), dir('a')])).message).toContain('repeat');
    expect(refusal(bytesOf([file('a'), file('b'), file('b')])).message).toContain('repeat');
    // Byte order of UTF-8, not UTF-16 code units: U+FF5E sorts before U+1F600 in UTF-16 only.
    refusal(bytesOf([file('\u{1F600}'), file('\uFF5E')]));
    expect(decodeTree(TREE_ID, bytesOf([file('\uFF5E'), file('\u{1F600}')])).entries).toHaveLength(2);
  });

  it.each([
    ['an unknown kind', file('a', { type: 'symlink', target: '/etc/passwd' }), 'unknown kind'],
    ['no kind', file('a', { type: undefined }), 'unknown kind'],
    ['a negative size', file('a', { size: -1 }), 'invalid size'],
    ['a fractional size', file('a', { size: 1.5 }), 'invalid size'],
    ['a size past 2^53', file('a', { size: 2 ** 53 }), 'invalid size'],
    ['a size that is a string', file('a', { size: '5' }), 'invalid size'],
    ['a negative inode', file('a', { inode: -3 }), 'invalid size'],
    ['a chunk id too short', file('a', { chunks: ['b'.repeat(63)] }), 'invalid chunks'],
    ['a chunk id in capitals', file('a', { chunks: ['B'.repeat(64)] }), 'invalid chunks'],
    ['a chunk id that is a path', file('a', { chunks: [`../${'b'.repeat(61)}`] }), 'invalid chunks'],
    ['chunks that are no list', file('a', { chunks: CHUNK }), 'invalid chunks'],
    ['a chunk that is no string', file('a', { chunks: [7] }), 'invalid chunks'],
    ['a directory naming no tree', dir('a', { tree: undefined }), 'names no tree'],
    ['a directory naming a bad tree id', dir('a', { tree: 'z'.repeat(64) }), 'names no tree'],
    ['a mode past 0o7777', file('a', { mode: 0o10000 }), 'invalid mode'],
    ['a negative mode', file('a', { mode: -1 }), 'invalid mode'],
    ['a fractional mode', file('a', { mode: 0.5 }), 'invalid mode'],
    ['a mode that is a string', dir('a', { mode: '755' }), 'invalid mode'],
    ['a time that is a string', file('a', { mtime: '2024-01-01' }), 'invalid time'],
    ['no time', dir('a', { mtime: null }), 'invalid time'],
  ])('refuses %s', (_what, entry, why) => {
    expect(refusal(bytesOf([file('0'), entry])).message).toContain(why);
  });

  it.each([
    ['bytes that are not JSON', Buffer.from('{"v":1,"entries":['), 'not JSON'],
    ['binary bytes', Buffer.from([0xff, 0xfe, 0x00, 0x01]), 'not JSON'],
    ['nothing', Buffer.alloc(0), 'not JSON'],
    ['JSON null', Buffer.from('null'), 'no entries'],
    ['a list', Buffer.from('[]'), 'no entries'],
    ['entries that are no list', Buffer.from('{"v":1,"entries":{"a":1}}'), 'no entries'],
  ])('refuses %s', (_what, bytes, why) => {
    expect(refusal(bytes).message).toContain(why);
  });
});

describe('compareNames', () => {
  /** Names from every range where UTF-16 and UTF-8 orders could part: ASCII, Latin, CJK, U+E000-U+FFFF, emoji. */
  const pieces = [
    'a',
    'B',
    '.',
    '-',
    '~',
    'é',
    'ß',
    '中',
    '文',
    '\uE000',
    '\uFB01',
    '\uFFFD',
    '😀',
    '𝄞',
    '🂡',
  ];
  function randomName(random: () => number): string {
    let name = '';
    const length = 1 + Math.floor(random() * 4);
    for (let i = 0; i < length; i++) name += pieces[Math.floor(random() * pieces.length)];
    return name;
  }
  /** A fixed pseudo-random sequence (the same names on every run). */
  function sequence(seed: number): () => number {
    let state = seed;
    return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  }

  it('orders names as their UTF-8 bytes compare', () => {
    const random = sequence(7);
    for (let i = 0; i < 20_000; i++) {
      const [a, b] = [randomName(random), randomName(random)];
      expect(Math.sign(compareNames(a, b)), `${a} / ${b}`).toBe(
        Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))),
      );
    }
    // Where UTF-16 alone would be wrong: U+FFFD sorts before an emoji in UTF-8, after it in UTF-16.
    expect(compareNames('\uFFFD', '😀')).toBeLessThan(0);
    expect('\uFFFD' < '😀').toBe(false);
    expect(compareNames('ab', 'abc')).toBeLessThan(0);
    expect(compareNames('same', 'same')).toBe(0);
  });

  it('sorts a directory as the tree format requires (decodeTree accepts it)', () => {
    const random = sequence(11);
    const names = [...new Set(Array.from({ length: 500 }, () => randomName(random)))].filter(
      (name) => name !== '.' && name !== '..',
    );
    const entries = names.map((name) => ({ name })).sort(byName);
    const tree = { entries: entries.map(({ name }) => file(name)) } as unknown as Tree;
    expect(decodeTree(TREE_ID, encodeTree(tree)).entries.map((node) => node.name)).toEqual(
      [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  IGNORED_LIMITS,
  ignoreMatcher,
  ignoredProblem,
  parseIgnored,
} from '../../src/backups/ignore-patterns.ts';

describe('ignored patterns (gitignore rules)', () => {
  const excluded = ignoreMatcher(
    parseIgnored(
      'logs\n/cache/\n*.tmp\nworld/**/session.lock\n# a comment\n!keep.tmp\nbuild/\n  spaced  \r\n\n',
    ),
  );

  it.each([
    ['logs', false, true],
    ['plugins/x/logs', false, true], // no slash in the pattern: any depth
    ['cache', true, true],
    ['a/cache', true, false], // a leading slash anchors to the top
    ['x.tmp', false, true],
    ['dir/deeper/x.tmp', false, true], // `*.tmp` matches at any depth
    ['keep.tmp', false, false], // taken back in by `!keep.tmp`
    ['world/region/deep/session.lock', false, true],
    ['world/level.dat', false, false],
    ['build', true, true],
    ['build', false, false], // a trailing slash names directories only
    ['logsbook', false, false],
    ['LOGS', false, false], // case matters, as in the volume's file names
    ['spaced', false, true],
    ['# a comment', false, false],
  ])('%s (directory: %s) excluded: %s', (path, isDirectory, expected) => {
    expect(excluded(path, isDirectory)).toBe(expected);
  });

  it('takes regular-expression characters literally', () => {
    expect(ignoreMatcher(['a.b'])('axb', false)).toBe(false);
    expect(ignoreMatcher(['(x)'])('(x)', false)).toBe(true);
  });

  it('excludes nothing without patterns', () => {
    expect(ignoreMatcher([])('anything', false)).toBe(false);
  });

  it('matches hostile patterns in time proportional to the input', () => {
    const hostile = [
      '******************************Z',
      `*${'a*'.repeat(200)}b`,
      `${'**/'.repeat(100)}Z`,
      `${'[a-z]*'.repeat(100)}Z`,
    ];
    const matches = ignoreMatcher(hostile);
    const started = performance.now();
    for (const length of [25, 100, 255]) {
      for (let i = 0; i < 50; i++) matches(`${'a'.repeat(length)}${i}`, false);
    }
    // A backtracking expression takes minutes on the first 25-character path; these take ms.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('limits on the ignored text', () => {
  it('accepts a usual list', () => {
    expect(ignoredProblem('logs\n*.tmp\n!keep.tmp\n# comment\n')).toBeNull();
  });

  it('refuses too many characters, patterns, or too long a pattern', () => {
    expect(ignoredProblem('a\n'.repeat(IGNORED_LIMITS.characters))).toMatch(/characters/);
    expect(ignoredProblem('a\n'.repeat(IGNORED_LIMITS.patterns + 1))).toMatch(/patterns/);
    expect(ignoredProblem('a'.repeat(IGNORED_LIMITS.patternCharacters + 1))).toMatch(/patterns of at most/);
    expect(ignoredProblem('a\n'.repeat(IGNORED_LIMITS.patterns))).toBeNull();
  });

  it('refuses control characters inside a pattern', () => {
    expect(ignoredProblem('a\u0000b')).toMatch(/control/);
    expect(ignoredProblem('a\tb')).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import { ignoreMatcher, parseIgnored } from './ignore-patterns.ts';

describe('ignored patterns', () => {
  const matches = ignoreMatcher(
    parseIgnored('logs\n/cache/\n*.tmp\nworld/**/session.lock\n# a comment\n!keep\n\n'),
  );

  it.each([
    ['logs', true],
    ['logs/latest.log', true],
    ['cache/a/b', true],
    ['x.tmp', true],
    ['world/region/deep/session.lock', true],
    ['dir/x.tmp', false],
    ['logsbook', false],
    ['keep', false],
    ['world/level.dat', false],
  ])('%s excluded: %s', (path, excluded) => {
    expect(matches(path)).toBe(excluded);
  });

  it('takes regular-expression characters literally', () => {
    expect(ignoreMatcher(['a.b'])('axb')).toBe(false);
    expect(ignoreMatcher(['(x)'])('(x)')).toBe(true);
  });
});

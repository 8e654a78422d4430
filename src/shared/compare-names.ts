/**
 * The order of two names' UTF-8 bytes, without encoding them (a sort of a directory of a
 * thousand names made twenty thousand buffers): UTF-8's byte order is code point order, which
 * UTF-16 code units follow, except that a surrogate (half of a code point above U+FFFF) sorts
 * after the units from U+E000 to U+FFFF.
 */
export function compareNames(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 || y < 0xd800) return x - y;
    return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A code unit from U+D800 up, ranked as the code points they stand for are. */
function codePointRank(unit: number): number {
  return unit < 0xe000 ? unit + 0x10000 : unit;
}

import { describe, expect, it } from 'vitest';
import {
  base32Decode,
  base32Encode,
  hotp,
  matchTotp,
  newTotpSecret,
  totpCode,
  totpStep,
} from '../../src/auth/totp.ts';

// The key of RFC 6238's SHA-1 test vectors (and RFC 4226's).
const RFC_KEY = Buffer.from('12345678901234567890', 'ascii');

describe('TOTP', () => {
  it('gives RFC 4226 appendix D HOTP values', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583'];
    expect(expected.map((_, counter) => hotp(RFC_KEY, counter))).toEqual(expected);
  });

  it.each([
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ])('gives RFC 6238 appendix B (SHA-1) at %i seconds, in 6 digits', (seconds, eightDigits) => {
    expect(totpCode(RFC_KEY, new Date(seconds * 1000))).toBe(eightDigits.slice(2));
  });

  it('accepts the code of the step before and after, and nothing further', () => {
    const time = new Date('2026-01-01T00:00:15Z');
    const step = totpStep(time);
    for (const offset of [-1, 0, 1]) {
      const code = hotp(RFC_KEY, step + offset);
      expect(matchTotp(RFC_KEY, code, time)).toBe(step + offset);
    }
    for (const offset of [-3, -2, 2, 3]) {
      expect(matchTotp(RFC_KEY, hotp(RFC_KEY, step + offset), time)).toBeNull();
    }
    expect(matchTotp(RFC_KEY, '12345', time)).toBeNull();
    expect(matchTotp(RFC_KEY, '1234567', time)).toBeNull();
    expect(matchTotp(RFC_KEY, ` ${hotp(RFC_KEY, step)} `, time)).toBe(step);
  });

  it('encodes base32 as RFC 4648 does, and reads it back in any case', () => {
    const vectors: [string, string][] = [
      ['', ''],
      ['f', 'MY'],
      ['fo', 'MZXQ'],
      ['foo', 'MZXW6'],
      ['foob', 'MZXW6YQ'],
      ['fooba', 'MZXW6YTB'],
      ['foobar', 'MZXW6YTBOI'],
    ];
    for (const [plain, encoded] of vectors) {
      expect(base32Encode(Buffer.from(plain))).toBe(encoded);
      expect(base32Decode(encoded.toLowerCase())?.toString()).toBe(plain);
    }
    expect(base32Decode('MZXW6YTBOI======')?.toString()).toBe('foobar');
    expect(base32Decode('not base32!')).toBeNull();
    const secret = newTotpSecret();
    expect(secret).toHaveLength(20);
    expect(base32Encode(secret)).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(base32Encode(secret))).toEqual(secret);
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/auth/secret-box.ts';

describe('SecretBox', () => {
  const key = randomBytes(32);
  const box = new SecretBox(() => key, 'test');

  it('opens what it sealed, for the same row only', () => {
    const secret = randomBytes(20);
    const sealed = box.seal(secret, 'user-1');
    expect(sealed).toMatch(/^v1:[A-Za-z0-9+/]+=*$/);
    expect(sealed).not.toContain(secret.toString('base64'));
    expect(box.open(sealed, 'user-1')).toEqual(secret);
    expect(box.open(sealed, 'user-2')).toBeNull();
    // A fresh nonce each time.
    expect(box.seal(secret, 'user-1')).not.toBe(sealed);
  });

  it('refuses another key, another purpose, tampering and garbage', () => {
    const sealed = box.seal(Buffer.from('secret'), 'u');
    expect(new SecretBox(() => randomBytes(32), 'test').open(sealed, 'u')).toBeNull();
    expect(new SecretBox(() => key, 'other').open(sealed, 'u')).toBeNull();
    const bytes = Buffer.from(sealed.slice(3), 'base64');
    bytes[bytes.length - 1]! ^= 1;
    expect(box.open(`v1:${bytes.toString('base64')}`, 'u')).toBeNull();
    for (const junk of ['', 'v1:', 'v2:abcd', 'v1:short', 'plain text'])
      expect(box.open(junk, 'u')).toBeNull();
  });
});

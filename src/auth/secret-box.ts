import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * Encrypts small secrets kept in the database (TOTP secrets) under a key derived from the app
 * key, so that a copy of the database alone does not give them away: AES-256-GCM, a random
 * 96-bit nonce per value, and the row's id as associated data (a value moved to another row does
 * not decrypt). Stored as `v1:<base64 of nonce, tag and ciphertext>`.
 */
export class SecretBox {
  private key: Buffer | undefined;

  /** `loadAppKey` is called on first use, so commands that encrypt nothing never make a key. */
  constructor(
    private readonly loadAppKey: () => Buffer,
    private readonly purpose: string,
  ) {}

  private derived(): Buffer {
    this.key ??= Buffer.from(hkdfSync('sha256', this.loadAppKey(), Buffer.alloc(0), this.purpose, 32));
    return this.key;
  }

  seal(plain: Buffer, boundTo: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.derived(), nonce);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return `${VERSION}:${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The plain value, or null when it was sealed under another key or for another row. */
  open(sealed: string, boundTo: string): Buffer | null {
    const [version, payload] = sealed.split(':');
    if (version !== VERSION || payload === undefined) return null;
    const bytes = Buffer.from(payload, 'base64');
    if (bytes.length < 28) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.derived(), bytes.subarray(0, 12));
      decipher.setAAD(Buffer.from(boundTo, 'utf8'));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
    } catch {
      return null;
    }
  }
}

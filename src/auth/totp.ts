import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Time-based one-time passwords (RFC 6238, on HOTP, RFC 4226) as authenticator apps make them:
 * HMAC-SHA-1, 6 digits, 30-second steps counted from the Unix epoch.
 */
const STEP_SECONDS = 30;
const DIGITS = 6;
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** A new secret: 20 random bytes (160 bits, the HMAC-SHA-1 key size RFC 4226 recommends). */
export function newTotpSecret(): Buffer {
  return randomBytes(20);
}

/** RFC 4648 base32, upper case, without padding (as otpauth:// URIs carry it). */
export function base32Encode(bytes: Buffer): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/** Reads base32 in any case, ignoring spaces, dashes and padding; null if it is not base32. */
export function base32Decode(text: string): Buffer | null {
  const clean = text.replace(/[\s=-]/g, '').toUpperCase();
  const bytes: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of clean) {
    const value = BASE32.indexOf(char);
    if (value < 0) return null;
    buffer = (buffer << 5) | value;
    bits += 5;
    if (bits >= 8) {
      bytes.push((buffer >>> (bits - 8)) & 255);
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  }
  return Buffer.from(bytes);
}

/** The HOTP value of `counter` under `key`, `DIGITS` digits with leading zeros. */
export function hotp(key: Buffer, counter: number): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  // Dynamic truncation: four bytes at the offset the last nibble names, top bit cleared.
  const offset = mac[mac.length - 1]! & 0x0f;
  const value = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(value % 10 ** DIGITS).padStart(DIGITS, '0');
}

/** The 30-second step `time` falls in. */
export function totpStep(time: Date): number {
  return Math.floor(time.getTime() / 1000 / STEP_SECONDS);
}

/** The code an authenticator shows at `time`. */
export function totpCode(key: Buffer, time: Date): string {
  return hotp(key, totpStep(time));
}

/**
 * The step whose code `code` is, among the current step and one either side (clocks drift, and
 * people type slowly), or null when it is none of them. Each candidate is compared in constant
 * time. Refusing a step already used is the caller's part (see `users.totp_last_step`).
 */
export function matchTotp(key: Buffer, code: string, time: Date, window = 1): number | null {
  const given = Buffer.from(code.trim().replace(/\s/g, ''));
  if (given.length !== DIGITS) return null;
  const now = totpStep(time);
  let matched: number | null = null;
  for (let step = now - window; step <= now + window; step++) {
    if (timingSafeEqual(Buffer.from(hotp(key, step)), given) && matched === null) matched = step;
  }
  return matched;
}

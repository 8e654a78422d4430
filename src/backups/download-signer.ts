import { createHmac, timingSafeEqual } from 'node:crypto';

export interface DownloadGrant {
  serverId: string;
  backupId: string;
  /** Seconds since the epoch after which the link no longer works. */
  expires: number;
  /** One path inside the backup (a file, or a directory sent as a .tar.gz); the whole backup if absent. */
  path?: string;
}

/**
 * Short-lived links that download a backup without a bearer token: the grant, and an
 * HMAC-SHA256 of it under the application key, in one URL-safe token.
 */
export class DownloadSigner {
  private key: Buffer | undefined;

  /** `loadKey` is called on first use: commands that sign nothing (`migrate`) never make a key. */
  constructor(private readonly loadKey: () => Buffer) {}

  sign(grant: DownloadGrant): string {
    const fields: unknown[] = [grant.serverId, grant.backupId, grant.expires];
    if (grant.path !== undefined) fields.push(grant.path);
    const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The grant a token carries, if its signature is ours and it has not expired. */
  verify(token: string, nowSeconds: number): DownloadGrant | null {
    const [payload, mac, extra] = token.split('.');
    if (payload === undefined || mac === undefined || extra !== undefined) return null;
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const fields = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
      const [serverId, backupId, expires, path] = fields;
      if (typeof serverId !== 'string' || typeof backupId !== 'string' || typeof expires !== 'number')
        return null;
      if (fields.length > 4 || (fields.length === 4 && typeof path !== 'string')) return null;
      if (expires < nowSeconds) return null;
      return typeof path === 'string'
        ? { serverId, backupId, expires, path }
        : { serverId, backupId, expires };
    } catch {
      return null;
    }
  }

  private mac(payload: string): string {
    this.key ??= this.loadKey();
    return createHmac('sha256', this.key).update(`aerie-backup-download:${payload}`).digest('base64url');
  }
}

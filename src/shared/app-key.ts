import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The key that signs download links: AERIE_APP_KEY when set (share it between nodes), otherwise
 * one made on first start and kept in `<data dir>/app.key` (readable by its owner only).
 */
export function loadAppKey(configured: string | null, dataDir: string): Buffer {
  if (configured !== null) return Buffer.from(configured, 'utf8');
  const file = path.join(dataDir, 'app.key');
  try {
    return Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    fs.writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (error) {
    // Another process made it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadAppKey(null, dataDir);
    throw error;
  }
}

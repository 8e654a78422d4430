/**
 * Writes a deterministic tree of mixed files, about 1.1 GiB: 20,000 small text files
 * (compressible, 1–16 KiB), 240 medium binary files (1–8 MiB, incompressible) and 4 large ones
 * (32 MiB), in nested directories, like a game server with worlds, plugins and logs.
 *
 *   node --import tsx bench/make-tree.ts <dir>
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const root = process.argv[2] ?? '';
if (root === '') throw new Error('usage: make-tree.ts DIR');

let seed = 1;
function random(): number {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
}

/** Incompressible bytes, made fast by chaining SHA-256 blocks. */
function noise(size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let block = createHash('sha256').update(String(random())).digest();
  for (let offset = 0; offset < size; offset += 32) {
    block = createHash('sha256').update(block).digest();
    block.copy(out, offset, 0, Math.min(32, size - offset));
  }
  return out;
}

function write(relative: string, data: Buffer | string): void {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, data);
}

for (let i = 0; i < 20_000; i++) {
  const lines = Math.floor(16 + random() * 240);
  const text = Array.from(
    { length: lines },
    (_, n) => `[${n}] player${i % 97} joined world ${i % 13} at ${n * 7}`,
  ).join('\n');
  write(`logs/day${i % 40}/session-${i}.log`, text);
}
for (let i = 0; i < 240; i++) {
  write(`world${i % 6}/region/r.${i}.mca`, noise(Math.floor((1 + random() * 7) * 1024 * 1024)));
}
for (let i = 0; i < 4; i++) write(`plugins/big-${i}.jar`, noise(32 * 1024 * 1024));

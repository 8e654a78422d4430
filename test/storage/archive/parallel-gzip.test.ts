import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip, gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { parallelGzip } from '../../../src/storage/archive/parallel-gzip.ts';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

/** Compressible text and incompressible noise, interleaved. */
function mixedData(bytes: number): Buffer {
  const parts: Buffer[] = [];
  for (let total = 0, n = 0; total < bytes; n++) {
    const part =
      n % 2 === 0
        ? Buffer.from(`[${n}] player${n % 97} joined world ${n % 13}\n`.repeat(40))
        : randomBytes(3000);
    parts.push(part);
    total += part.length;
  }
  return Buffer.concat(parts).subarray(0, bytes);
}

/** `data` cut into chunks of `size` bytes (unrelated to the block size). */
function* chunksOf(data: Buffer, size: number): Generator<Buffer> {
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size);
}

async function compress(data: Buffer, options: Parameters<typeof parallelGzip>[0]): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const member of parallelGzip(options)(chunksOf(data, 7000))) out.push(member);
  return Buffer.concat(out);
}

function tempFile(content: Buffer): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'aerie-gzip-'));
  roots.push(root);
  const file = path.join(root, 'data.gz');
  fs.writeFileSync(file, content);
  return file;
}

describe('parallelGzip', () => {
  it('writes one gzip member per block, in order', async () => {
    const data = mixedData(100_000);
    const blockBytes = 16 * 1024;

    const output = await compress(data, { blockBytes, concurrency: 3 });

    const members: Buffer[] = [];
    for (let offset = 0; offset < data.length; offset += blockBytes)
      members.push(gzipSync(data.subarray(offset, offset + blockBytes)));
    expect(members).toHaveLength(7);
    expect(output.equals(Buffer.concat(members))).toBe(true);
  });

  it('round-trips the bytes exactly through Node gunzip and GNU gzip', async () => {
    const data = mixedData(300_001);

    const output = await compress(data, { blockBytes: 32 * 1024, concurrency: 2 });

    expect(gunzipSync(output).equals(data)).toBe(true);
    const streamed: Buffer[] = [];
    for await (const chunk of Readable.from([output]).pipe(createGunzip())) streamed.push(chunk as Buffer);
    expect(Buffer.concat(streamed).equals(data)).toBe(true);
    const file = tempFile(output);
    execFileSync('gzip', ['-t', file]);
    expect(execFileSync('gzip', ['-dc', file], { maxBuffer: 16 * 1024 * 1024 }).equals(data)).toBe(true);
  });

  it('makes one valid empty member of no input', async () => {
    const output = await compress(Buffer.alloc(0), {});

    expect(gunzipSync(output).length).toBe(0);
    execFileSync('gzip', ['-t', tempFile(output)]);
  });

  it('keeps at most two blocks per thread in flight and reads no further while output waits', async () => {
    const blockBytes = 1024;
    let pulled = 0;
    function* source(): Generator<Buffer> {
      for (let n = 0; n < 1000; n++) {
        pulled += 1;
        yield Buffer.alloc(blockBytes, n);
      }
    }

    const members = parallelGzip({ blockBytes, concurrency: 2 })(source());
    const first = await members.next();
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect(gunzipSync(first.value as Buffer).equals(Buffer.alloc(blockBytes, 0))).toBe(true);
    // Two blocks for each of the two threads and the one that filled the queue: the rest of the
    // input is unread.
    expect(pulled).toBeLessThanOrEqual(5);
    await members.return(undefined);
  });

  // Thread priorities are Linux's (setpriority on a thread id); elsewhere the threads keep theirs.
  // Under a runner already at nice 10 or more, the threads keep its priority: nothing to see.
  it.skipIf(!fs.existsSync('/proc/thread-self') || os.getPriority() >= 10)(
    'compresses in threads of background priority, and the calling thread keeps its own',
    async () => {
      /** The nice value of each thread of this process, from /proc. */
      const niceness = () =>
        fs
          .readdirSync('/proc/self/task')
          .map((task) => niceOf(fs.readFileSync(`/proc/self/task/${task}/stat`, 'utf8')));
      const niceOf = (stat: string) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      const own = niceOf(fs.readFileSync('/proc/thread-self/stat', 'utf8'));
      const niced = () => niceness().filter((n) => n === 10).length;
      /** Waits (a loaded machine starts threads slowly) until `niced()` is `count`; returns it. */
      const until = async (count: number) => {
        for (let i = 0; i < 200 && niced() !== count; i += 1)
          await new Promise((resolve) => setTimeout(resolve, 50));
        return niced();
      };
      const before = niced();
      const members = parallelGzip({ blockBytes: 1024, concurrency: 2 })(
        chunksOf(mixedData(64 * 1024), 1024),
      );
      await members.next();
      expect(await until(before + 2)).toBe(before + 2);
      expect(niceOf(fs.readFileSync('/proc/thread-self/stat', 'utf8'))).toBe(own);
      while (!(await members.next()).done);
      expect(await until(before)).toBe(before);
    },
  );

  it('fills released members again: a whole stream goes through a handful of buffers', async () => {
    const data = mixedData(400_000);
    const gzip = parallelGzip({ blockBytes: 8 * 1024, concurrency: 2 });
    const copies: Buffer[] = [];
    for await (const member of gzip(chunksOf(data, 3000))) {
      copies.push(Buffer.from(member)); // what a writer would write, before it releases
      gzip.release(member);
    }

    expect(copies.length).toBe(49);
    expect(gunzipSync(Buffer.concat(copies)).equals(data)).toBe(true);
    // Two blocks in flight per thread, one being filled, one with the consumer.
    expect(gzip.buffersAllocated()).toBeLessThanOrEqual(6);
  });

  it('leaves members that are not released alone, and ignores buffers not its own', async () => {
    const data = mixedData(100_000);
    const gzip = parallelGzip({ blockBytes: 8 * 1024, concurrency: 2 });
    const members: Buffer[] = [];
    for await (const member of gzip(chunksOf(data, 3000))) {
      members.push(member);
      gzip.release(Buffer.from(member)); // a copy: its memory is not the stage's to reuse
    }

    expect(gzip.buffersAllocated()).toBe(members.length);
    expect(gunzipSync(Buffer.concat(members)).equals(data)).toBe(true);
  });

  it('refuses a block size or a concurrency below 1', () => {
    expect(() => parallelGzip({ blockBytes: 0 })).toThrow(/block size/);
    expect(() => parallelGzip({ concurrency: 0 })).toThrow(/concurrency/);
  });
});

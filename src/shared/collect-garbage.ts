import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collector = (options: { type: 'minor' | 'major' }) => void;

let collector: Collector | null | undefined;

/**
 * Runs a young-generation collection now, in the calling thread. For a thread whose only
 * garbage is a large buffer per unit of work (zlib's output in a compression thread): V8 frees
 * an ArrayBuffer's memory only when it collects, and left to itself it lets about 32 MB of them
 * build up per thread before a young collection, memory the C allocator then keeps. Collecting
 * after each unit costs well under a millisecond on a thread whose heap is a few MB, and keeps
 * its memory at one unit's worth.
 *
 * V8 offers the collector to scripts only behind `--expose-gc`; the flag is set once, and the
 * function is taken from a fresh context, where V8 installs it. Where that is not possible the
 * call does nothing: memory is then as V8 leaves it, and nothing else changes.
 */
export function collectYoungGarbage(): void {
  collector ??= exposeCollector();
  collector?.({ type: 'minor' });
}

function exposeCollector(): Collector | null {
  try {
    setFlagsFromString('--expose-gc');
    const collect: unknown = runInNewContext('gc');
    return typeof collect === 'function' ? (collect as Collector) : null;
  } catch {
    return null;
  }
}

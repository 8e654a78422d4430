import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's `gc`: with `{ type: 'minor' }` the young generation, without options the whole heap. */
type Collector = (options?: { type: 'minor' }) => void;

let collector: Collector | null | undefined;

/**
 * Runs a collection now, in the calling thread: of the young generation alone (`young`, well
 * under a millisecond on a heap of a few MB) or of the whole heap (`all`, a few milliseconds).
 *
 * For threads whose garbage is large buffers: V8 frees an ArrayBuffer's memory only when it
 * collects. Left to itself it lets about 32 MB of new buffers build up in a thread before a young
 * collection, and frees a buffer that lived through two of them (an upload's part, say) only
 * after 64 MB more, memory the C allocator then keeps. A compression thread collects its young
 * generation after each block; an uploading thread collects all of it after each part.
 *
 * V8 offers the collector to scripts only behind `--expose-gc`; the flag is set once, and the
 * function is taken from a fresh context, where V8 installs it. Where that is not possible the
 * call does nothing: memory is then as V8 leaves it, and nothing else changes.
 */
export function collectGarbage(generation: 'young' | 'all' = 'young'): void {
  collector ??= exposeCollector();
  if (generation === 'young') collector?.({ type: 'minor' });
  else collector?.();
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

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * V8's `gc`: with `{ type: 'minor' }` the young generation, without options the whole heap, with
 * `{ type: 'major', flavor: 'last-resort' }` the whole heap as V8 collects it when memory runs out.
 */
type Collector = (options?: { type: 'minor' | 'major'; execution?: 'sync'; flavor?: 'last-resort' }) => void;

let collector: Collector | null | undefined;

/**
 * Runs a collection now, in the calling thread: of the young generation alone (`young`, well
 * under a millisecond on a heap of a few MB), of the whole heap (`all`, a few milliseconds), or of
 * the whole heap that also gives memory back (`reduce`, about 65 ms on the heap of `aerie serve`).
 *
 * For threads whose garbage is large buffers: V8 frees an ArrayBuffer's memory only when it
 * collects. Left to itself it lets about 32 MB of new buffers build up in a thread before a young
 * collection, and frees a buffer that lived through two of them (an upload's part, say) only
 * after 64 MB more, memory the C allocator then keeps. A compression thread collects its young
 * generation after each block; an uploading thread collects all of it after each part.
 *
 * `reduce` is for a thread that stays (a server's main thread), once what made V8 grow its young
 * generation is over: V8 grows it (from 1 MiB, up to 128 MiB on a machine of 24 GB) as objects
 * live through young collections, and shrinks it only in a collection that reduces memory, which
 * it runs by itself only when the thread is idle at the right moment (an idle `aerie serve` kept
 * the 32 MiB its start-up grew for as long as it was watched, a minute). Such a collection also
 * gives back the pages V8 keeps to grow the heap into again. (A V8 that does not know the
 * `last-resort` flavor runs a collection of all instead.)
 *
 * V8 offers the collector to scripts only behind `--expose-gc`; the flag is set once, and the
 * function is taken from a fresh context, where V8 installs it. Where that is not possible the
 * call does nothing: memory is then as V8 leaves it, and nothing else changes.
 */
export function collectGarbage(generation: 'young' | 'all' | 'reduce' = 'young'): void {
  collector ??= exposeCollector();
  if (generation === 'young') collector?.({ type: 'minor' });
  else if (generation === 'reduce') collector?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
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

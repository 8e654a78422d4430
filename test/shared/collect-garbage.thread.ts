/**
 * A thread for collect-garbage.test.ts. It drops 10 MiB of new buffers, as a compression thread
 * drops zlib's output, and calls collectGarbage('young'); then it drops 10 MiB of buffers that
 * lived through two young collections, as an upload's parts do, and calls collectGarbage('all').
 * For each call it reports whether V8 ran a collection of that kind during the call (its `gc`
 * performance entries, timed) and how many MiB of buffer memory the thread holds after a pause
 * (V8 frees a collected buffer's memory in the background).
 */
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { collectGarbage } from '../../src/shared/collect-garbage.ts';

const heldMiB = () => Math.round(process.memoryUsage().arrayBuffers / 2 ** 20);
const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
const buffers = () => Array.from({ length: 10 }, (_, n) => new Uint8Array(2 ** 20).fill(n));

const collections: Array<{ kind: number; start: number }> = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    collections.push({
      kind: (entry as unknown as { detail: { kind: number } }).detail.kind,
      start: entry.startTime,
    });
});
observer.observe({ entryTypes: ['gc'] });

/** Calls collectGarbage and says whether a collection of one of `kinds` started during the call. */
async function collected(generation: 'young' | 'all', kinds: number[]): Promise<boolean> {
  const from = performance.now();
  collectGarbage(generation);
  const to = performance.now();
  await pause(); // gc entries are delivered asynchronously
  return collections.some((c) => kinds.includes(c.kind) && c.start >= from && c.start <= to);
}

// The first call also sets the collector up (in a new context, which V8 may follow with a
// collection of all): done before anything is measured.
collectGarbage('young');

(() => buffers())();

setImmediate(async () => {
  // Asked for a young collection while it is marking the old generation by itself, V8 finishes
  // that instead: a collection of all, which frees the young generation too.
  const { NODE_PERFORMANCE_GC_MINOR: MINOR, NODE_PERFORMANCE_GC_MAJOR: MAJOR } = constants;
  const youngRan = await collected('young', [MINOR, MAJOR]);
  const young = heldMiB();

  const held: { parts: Uint8Array[] | null } = { parts: buffers() };
  collectGarbage('young');
  collectGarbage('young'); // survived twice: now in the old generation
  await pause();
  const live = held.parts?.length === 10 ? heldMiB() : 0;
  held.parts = null;
  const allRan = await collected('all', [MAJOR]);
  observer.disconnect();
  parentPort?.postMessage({ youngRan, young, live, allRan, oldAfterAll: heldMiB() });
});

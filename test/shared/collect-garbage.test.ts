import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/shared/collect-garbage.ts';
import { startThread } from '../../src/shared/thread.ts';
import { growYoungGeneration, youngGenerationMiB } from '../support/young-generation.ts';

interface Held {
  youngRan: boolean;
  young: number;
  live: number;
  allRan: boolean;
  oldAfterAll: number;
}

describe('collectGarbage', () => {
  it("collects the calling thread's young generation, or all of it, at once, freeing dropped buffers", async () => {
    const thread = startThread(new URL('./collect-garbage.thread.ts', import.meta.url), {});
    try {
      const held = await new Promise<Held>((resolve, reject) => {
        thread.once('message', resolve);
        thread.once('error', reject);
      });

      // Each call runs a collection of its kind there and then (V8's own gc entries, timed within
      // the call), whatever V8 would have done alone: whether it would have collected the
      // buffers by itself meanwhile is its choice (Node 20's V8 kept them, Node 24's often
      // does not), so what it does alone is not asserted.
      expect(held.youngRan).toBe(true);
      expect(held.allRan).toBe(true);
      // New buffers are gone after the young collection; buffers that lived through two young
      // collections are held until the collection of all, then gone.
      expect(held.young).toBeLessThan(2);
      expect(held.live).toBeGreaterThanOrEqual(10);
      expect(held.oldAfterAll).toBeLessThan(2);
    } finally {
      await thread.terminate();
    }
  });

  it('gives back, with `reduce`, the young generation that survivors made V8 grow', () => {
    growYoungGeneration();
    expect(youngGenerationMiB()).toBeGreaterThanOrEqual(8);
    // A collection of all leaves it as it is.
    collectGarbage('all');
    expect(youngGenerationMiB()).toBeGreaterThanOrEqual(8);

    collectGarbage('reduce');
    expect(youngGenerationMiB()).toBeLessThanOrEqual(1);
  });
});

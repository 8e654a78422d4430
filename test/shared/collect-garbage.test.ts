import { describe, expect, it } from 'vitest';
import { startThread } from '../../src/shared/thread.ts';

interface Held {
  leftAlone: number;
  young: number;
  live: number;
  oldAfterYoung: number;
  oldAfterAll: number;
}

describe('collectGarbage', () => {
  it("frees the calling thread's dropped buffers at once, which V8 alone leaves for later", async () => {
    const thread = startThread(new URL('./collect-garbage.thread.ts', import.meta.url), {});
    try {
      const held = await new Promise<Held>((resolve, reject) => {
        thread.once('message', resolve);
        thread.once('error', reject);
      });

      // New buffers: V8 alone keeps them; a young collection frees them.
      expect(held.leftAlone).toBeGreaterThanOrEqual(10);
      expect(held.young).toBeLessThan(2);
      // Buffers that lived through two young collections: only a collection of all frees them.
      expect(held.live).toBeGreaterThanOrEqual(10);
      expect(held.oldAfterYoung).toBeGreaterThanOrEqual(10);
      expect(held.oldAfterAll).toBeLessThan(2);
    } finally {
      await thread.terminate();
    }
  });
});

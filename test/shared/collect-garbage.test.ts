import { describe, expect, it } from 'vitest';
import { startThread } from '../../src/shared/thread.ts';

describe('collectYoungGarbage', () => {
  it("frees the calling thread's dropped buffers at once, which V8 alone leaves for later", async () => {
    const thread = startThread(new URL('./collect-garbage.thread.ts', import.meta.url), {});
    try {
      const held = await new Promise<{ leftAlone: number; collected: number }>((resolve, reject) => {
        thread.once('message', resolve);
        thread.once('error', reject);
      });

      expect(held.leftAlone).toBeGreaterThanOrEqual(10);
      expect(held.collected).toBeLessThan(2);
    } finally {
      await thread.terminate();
    }
  });
});

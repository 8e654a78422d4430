/** V8's young generation in the calling thread, as the tests of what gives it back see it. */
import { getHeapSpaceStatistics } from 'node:v8';
import { collectGarbage } from '../../src/shared/collect-garbage.ts';

/** The memory V8 holds for the calling thread's young generation (both its halves), in MiB. */
export function youngGenerationMiB(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size / 2 ** 20;
}

/**
 * Makes V8 grow the young generation as a busy server's work does: objects that live through
 * young collections (about 2.5 MiB of them through each of 32), then are dropped. V8 keeps the
 * young generation grown afterwards (to 64 MiB here).
 */
export function growYoungGeneration(): void {
  const kept: object[][] = [];
  for (let i = 0; i < 32; i++) {
    kept.push(Array.from({ length: 20_000 }, (_, j) => ({ j })));
    if (kept.length > 4) kept.shift();
    collectGarbage('young');
  }
  kept.length = 0;
}

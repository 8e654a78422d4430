/**
 * A thread for collect-garbage.test.ts. It drops 10 MiB of new buffers, as a compression thread
 * drops zlib's output, and reports how many MiB of buffer memory it holds after a pause, then
 * after collectGarbage('young'). Then it drops 10 MiB of buffers that lived through two young
 * collections, as an upload's parts do, and reports what it holds after another young
 * collection, then after collectGarbage('all'). V8 frees a collected buffer's memory in the
 * background: each reading comes after a pause.
 */
import { parentPort } from 'node:worker_threads';
import { collectGarbage } from '../../src/shared/collect-garbage.ts';

const heldMiB = () => Math.round(process.memoryUsage().arrayBuffers / 2 ** 20);
const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
const buffers = () => Array.from({ length: 10 }, (_, n) => new Uint8Array(2 ** 20).fill(n));

(() => buffers())();

setImmediate(async () => {
  await pause();
  const leftAlone = heldMiB();
  collectGarbage('young');
  await pause();
  const young = heldMiB();

  const held: { parts: Uint8Array[] | null } = { parts: buffers() };
  collectGarbage('young');
  collectGarbage('young'); // survived twice: now in the old generation
  await pause();
  const live = held.parts?.length === 10 ? heldMiB() : 0;
  held.parts = null;
  collectGarbage('young');
  await pause();
  const oldAfterYoung = heldMiB();
  collectGarbage('all');
  await pause();
  parentPort?.postMessage({ leftAlone, young, live, oldAfterYoung, oldAfterAll: heldMiB() });
});

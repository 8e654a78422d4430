/**
 * A thread for collect-garbage.test.ts: drops 10 MiB of buffers, as a compression thread drops
 * zlib's output, and reports how many MiB of buffer memory the thread holds after a pause, then
 * after collectYoungGarbage and a pause (V8 frees a collected buffer's memory in the background).
 */
import { parentPort } from 'node:worker_threads';
import { collectYoungGarbage } from '../../src/shared/collect-garbage.ts';

const heldMiB = () => Math.round(process.memoryUsage().arrayBuffers / 2 ** 20);
const pause = () => new Promise((resolve) => setTimeout(resolve, 100));

(() => {
  for (let n = 0; n < 10; n += 1) new Uint8Array(new ArrayBuffer(2 ** 20)).fill(n);
})();

setImmediate(async () => {
  await pause();
  const leftAlone = heldMiB();
  collectYoungGarbage();
  await pause();
  parentPort?.postMessage({ leftAlone, collected: heldMiB() });
});

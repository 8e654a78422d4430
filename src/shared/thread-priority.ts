import fs from 'node:fs';
import os from 'node:os';

/**
 * The nice value of background work (compressing, extracting, walking trees). The thread that
 * answers HTTP keeps 0; at 10 the kernel gives it about ten times the CPU share of a busy
 * background thread whenever both want a core, so a backup on every core leaves requests fast.
 */
export const BACKGROUND_NICENESS = 10;

/**
 * Lowers the scheduling priority of the calling thread alone to `niceness`, unless it is lower
 * already (on Linux, a thread id is a valid target for setpriority). Call it first thing in a worker thread that does background work.
 * Returns whether it could; elsewhere than Linux the thread keeps its priority.
 */
export function lowerThreadPriority(niceness = BACKGROUND_NICENESS): boolean {
  try {
    const thread = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(thread) || thread <= 0) return false;
    // Never raises it: a process started at a lower priority (nice 19) keeps it in every thread.
    if (os.getPriority(thread) < niceness) os.setPriority(thread, niceness);
    return true;
  } catch {
    return false;
  }
}

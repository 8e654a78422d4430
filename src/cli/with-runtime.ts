import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { openRuntime, type Runtime } from '../runtime.ts';
import { collectGarbage } from '../shared/collect-garbage.ts';

export interface CommandOptions {
  /**
   * The command's work runs in other threads while this one waits (a backup, an extract, a
   * check): the young generation that loading the program grew (16 MiB) is given back, with one
   * memory-reducing collection (about 40 ms) once that work has started, while this thread would
   * only wait. A first backup of the bench volume peaked at 171 MiB instead of 179.
   */
  waitsOnThreads?: boolean;
}

/** How long after it starts a command whose work runs in threads gives back memory (see above). */
const GIVE_BACK_AFTER_MS = 150;

/** The options of a command whose work runs in other threads. */
export const THREAD_WORK: CommandOptions = { waitsOnThreads: true };

/**
 * Runs a one-shot command on a runtime of its own, closed when the command ends. Its logs go to
 * stderr: stdout holds the command's result.
 */
export async function withRuntime<T>(
  work: (runtime: Runtime) => T | Promise<T>,
  options: CommandOptions = {},
): Promise<T> {
  const runtime = await openRuntime(loadConfig(), { logTo: 'stderr' });
  // Not before the work: it would hold up the start of the thread doing it. A command done
  // sooner needs no collection.
  if (options.waitsOnThreads === true) setTimeout(() => collectGarbage('reduce'), GIVE_BACK_AFTER_MS).unref();
  try {
    return await work(runtime);
  } finally {
    await runtime.close();
  }
}

/**
 * Ends a command that prints one record: `--json` chooses how it is printed (see `printRecord`),
 * and `work` runs with the command's options on a runtime of its own.
 */
export function recordAction<O extends { json: boolean }>(
  command: Command,
  work: (options: O, runtime: Runtime) => Promise<void>,
): void {
  command
    .option('--json', 'print the record as JSON', false)
    .action((options: O) => withRuntime((runtime) => work(options, runtime)));
}

/** Work done from the command line is recorded as the system's, with no address. */
export function cliContext() {
  return { batch: randomUUID(), ip: null, userAgent: 'aerie-cli' };
}

import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { openRuntime, type Runtime } from '../runtime.ts';

/**
 * Runs a one-shot command on a runtime of its own, closed when the command ends. Its logs go to
 * stderr: stdout holds the command's result.
 */
export async function withRuntime<T>(work: (runtime: Runtime) => T | Promise<T>): Promise<T> {
  const runtime = await openRuntime(loadConfig(), { logTo: 'stderr' });
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

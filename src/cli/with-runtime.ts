import { randomUUID } from 'node:crypto';
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

/** Work done from the command line is recorded as the system's, with no address. */
export function cliContext() {
  return { batch: randomUUID(), ip: null, userAgent: 'aerie-cli' };
}

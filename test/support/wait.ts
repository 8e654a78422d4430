import { createServer as createNetServer } from 'node:net';

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

export interface UntilOptions {
  /** How long to keep asking (default 30 s). */
  timeoutMs?: number;
  /** What is awaited, for the timeout's message. */
  what?: string;
  /** Pause between two probes (default 50 ms). */
  intervalMs?: number;
  /** More to say when it times out, such as the logs of the processes involved. */
  context?: () => string;
}

/**
 * Asks `probe` until it gives a value other than `undefined` or `false`, and returns that value.
 * A probe that throws counts as "not yet"; its last error is in the timeout's message.
 */
export async function until<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 30_000, what = 'a condition', intervalMs = 50, context }: UntilOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const reason =
        lastError === undefined
          ? ''
          : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`;
      const more = context === undefined ? '' : `\n${context()}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${reason}${more}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Resolves once an Aerie answers HTTP on `port`. */
export async function untilListening(port: number): Promise<void> {
  // A start from the sources under a whole suite on two cores has taken over 30 s.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/openapi.json`)).ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`nothing listening on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

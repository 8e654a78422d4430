/**
 * `aerie serve` stops cleanly on a SIGTERM sent the moment it says it is listening: the handler is
 * in place before that line is written, and a signal that arrives while the rest of start-up
 * (the metrics listener, the worker) is still under way waits for it, then stops everything.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aerieArgv, ROOT } from '../support/aerie-process.ts';
import { freePort } from '../support/wait.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

interface Stopped {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  /** Whether the listening line had been seen when the signal was sent. */
  signalledOnListening: boolean;
}

/** Starts `aerie serve <args>` and sends SIGTERM in the same tick as its listening line arrives. */
function serveAndStopOnListening(args: string[], env: Record<string, string> = {}): Promise<Stopped> {
  const child = spawn(process.execPath, aerieArgv(['serve', ...args]), {
    cwd: ROOT,
    env: {
      ...process.env,
      AERIE_DATA_DIR: app.dataDir,
      DATABASE_URL: app.config.database.url,
      AERIE_WORKER_POLL_MS: '50',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let signalledOnListening = false;
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (!signalledOnListening && output.includes('Server listening at')) {
      signalledOnListening = true;
      child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, signalledOnListening });
    }),
  );
}

/** The messages of the JSON log lines printed. */
function messages(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg: string }).msg);
}

describe('aerie serve, stopped as soon as it is listening', () => {
  it.each([
    ['--role all (API and worker)', ['--role', 'all']],
    ['--role api', ['--role', 'api']],
  ])(
    '%s exits 0 with its shutdown log',
    async (_, role) => {
      for (let round = 0; round < 3; round++) {
        const [port, metricsPort] = [await freePort(), await freePort()];
        const stopped = await serveAndStopOnListening([...role, '--port', String(port)], {
          // A listener of its own for the metrics: one more step of start-up after the API's.
          AERIE_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
        });
        expect(stopped.signalledOnListening, stopped.output).toBe(true);
        expect({ code: stopped.code, signal: stopped.signal }, stopped.output).toEqual({
          code: 0,
          signal: null,
        });
        const said = messages(stopped.output);
        expect(said).toContain('shutting down');
        expect(said.indexOf('shutting down')).toBeGreaterThan(said.findIndex((m) => m.includes('listening')));
        expect(stopped.output).not.toContain('could not stop cleanly');
        // Nothing is left listening.
        await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
        await expect(fetch(`http://127.0.0.1:${metricsPort}/metrics`)).rejects.toThrow();
      }
    },
    120_000,
  );
});

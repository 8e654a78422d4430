import pino, { type Logger } from 'pino';

/**
 * Where a process logs: a server or worker to stdout; a one-shot command to stderr, because its
 * stdout is its result (one JSON object with `--json`).
 */
export type LogDestination = 'stdout' | 'stderr';

/** JSON lines for machines; pretty lines when a person watches the terminal the logs go to. */
export function createLogger(level: string, to: LogDestination = 'stdout'): Logger {
  const fd = to === 'stdout' ? 1 : 2;
  if (level === 'silent') return pino({ level });
  if ((to === 'stdout' ? process.stdout : process.stderr).isTTY) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss', destination: fd } },
    });
  }
  return to === 'stdout' ? pino({ level }) : pino({ level }, pino.destination(fd));
}

import pino, { type Logger } from 'pino';

/** JSON lines for machines; pretty lines when a person watches the terminal. */
export function createLogger(level: string): Logger {
  if (process.stdout.isTTY) {
    return pino({ level, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } });
  }
  return pino({ level });
}

import pino, { type Logger, type LoggerOptions } from 'pino';

/**
 * Where a process logs: a server or worker to stdout; a one-shot command to stderr, because its
 * stdout is its result (one JSON object with `--json`).
 */
export type LogDestination = 'stdout' | 'stderr';

const REDACTED = '[REDACTED]';

/**
 * Query parameters whose values are credentials: the token of a signed download link (anyone who
 * reads it can download that backup until it expires), and the usual names of others, such as
 * those of a presigned S3 link.
 */
const SECRET_PARAMETERS = new Set([
  'token',
  'access_token',
  'api_key',
  'password',
  'secret',
  'signature',
  'x-amz-credential',
  'x-amz-security-token',
  'x-amz-signature',
]);

/**
 * A `name=value` in a query string, as it appears inside a JSON log line: a value ends at `&`,
 * `?` (so a value cannot hide a parameter), `#`, white space, or a quote or backslash (the end of
 * the JSON string, or an escape), so that replacing it keeps the line valid JSON.
 */
const QUERY_PARAMETER = /([?&])([^=&?#\s"\\]+)=([^&?#\s"\\]*)/g;

function isSecretParameter(rawName: string): boolean {
  try {
    // As the query parser reads it: `%74oken` and `TOKEN` are kept out of the log as well.
    return SECRET_PARAMETERS.has(decodeURIComponent(rawName.replace(/\+/g, ' ')).trim().toLowerCase());
  } catch {
    return false;
  }
}

/** `text` with the values of secret-bearing query parameters replaced by `[REDACTED]`. */
export function redactSecrets(text: string): string {
  if (!text.includes('=')) return text;
  return text.replace(QUERY_PARAMETER, (whole, lead: string, name: string) =>
    isSecretParameter(name) ? `${lead}${name}=${REDACTED}` : whole,
  );
}

/**
 * The options of every logger: credentials never reach a log line. The Authorization, Cookie and
 * Set-Cookie headers are censored wherever a logged object holds them; and each line, as written,
 * loses the values of secret query parameters wherever they appear: the URL of a request
 * (logged with each request, `?token=…` of a signed download included), a
 * message, an error's message or stack.
 */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: ['authorization', 'cookie', 'set-cookie'].flatMap((header) => [
        `headers["${header}"]`,
        `*.headers["${header}"]`,
      ]),
      censor: REDACTED,
    },
    hooks: { streamWrite: redactSecrets },
  };
}

/**
 * How log lines are written (AERIE_LOG_FORMAT): `json`, one JSON object a line; `pretty`, one
 * short readable line each (an error's stack still spans several); `auto`, pretty when the
 * destination is a terminal and JSON otherwise.
 */
export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * The keys a pretty line leaves out: the process and the request ID (in every JSON line), and the
 * fields of the request line (see src/http/request-log.ts), whose message already says them.
 */
const PRETTY_IGNORED = ['pid', 'hostname', 'reqId', 'method', 'url', 'statusCode', 'responseTime'];

/** JSON lines for machines; short pretty lines when asked for, or when a person watches the terminal. */
export function createLogger(
  level: string,
  to: LogDestination = 'stdout',
  format: LogFormat = 'auto',
): Logger {
  const fd = to === 'stdout' ? 1 : 2;
  const options = loggerOptions(level);
  if (level === 'silent') return pino(options);
  const terminal = (to === 'stdout' ? process.stdout : process.stderr).isTTY === true;
  if (format === 'pretty' || (format === 'auto' && terminal)) {
    return pino({
      ...options,
      transport: {
        target: 'pino-pretty',
        options: {
          translateTime: 'SYS:HH:MM:ss',
          singleLine: true,
          ignore: PRETTY_IGNORED.join(','),
          destination: fd,
        },
      },
    });
  }
  return to === 'stdout' ? pino(options) : pino(options, pino.destination(fd));
}

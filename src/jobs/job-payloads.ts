/**
 * How a claimed job is read before it runs: the handler of its kind, and its payload, parsed and
 * checked against the schema that handler declares. A job that cannot be read this way can never
 * run: it fails at once, and its handler is not called (it could not make sense of the payload).
 */
import { Value } from '@sinclair/typebox/value';
import type { JobHandler, JobHandlers } from './job-handler.ts';
import type { JobRow } from './job.table.ts';

export type ReadJob =
  | { readable: true; handler: JobHandler<unknown>; payload: unknown }
  | {
      readable: false;
      /** Why the job failed, as recorded on it. */
      reason: string;
      /** The log line's message, and what else it says. */
      problem: string;
      details?: Record<string, unknown>;
    };

export function readJob(row: Pick<JobRow, 'kind' | 'payload'>, handlers: JobHandlers): ReadJob {
  const handler = (handlers as Record<string, JobHandler<unknown> | undefined>)[row.kind];
  if (handler === undefined)
    return {
      readable: false,
      reason: `no handler for jobs of kind ${row.kind}`,
      problem: 'no handler for this kind of job',
    };
  let payload: unknown;
  try {
    payload = JSON.parse(row.payload);
  } catch (error) {
    return {
      readable: false,
      reason: 'the job could not be read',
      problem: 'the job payload is not valid JSON',
      details: { err: error },
    };
  }
  const invalid = handler.payload === undefined ? null : payloadProblem(row.kind, handler.payload, payload);
  if (invalid !== null)
    return { readable: false, reason: invalid, problem: 'the job payload does not match its kind' };
  return { readable: true, handler, payload };
}

/**
 * Why `payload` is no payload of a `kind` job, naming the first field that is wrong
 * (`serverId`, `servers.0.id`); null when it is one.
 */
export function payloadProblem(
  kind: string,
  schema: NonNullable<JobHandler<unknown>['payload']>,
  payload: unknown,
): string | null {
  if (Value.Check(schema, payload)) return null;
  const first = Value.Errors(schema, payload).First();
  const what = first === undefined ? 'does not match its schema' : lowerFirst(first.message);
  const field =
    first === undefined ? '' : first.path.split('/').filter(Boolean).map(unescapePointer).join('.');
  return field === ''
    ? `the payload of a ${kind} job is invalid: ${what}`
    : `the payload of a ${kind} job is invalid at ${field}: ${what}`;
}

/** A JSON pointer's segment, as written in the payload. */
function unescapePointer(segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/** The server and backup a job is about, from its payload, for its log lines. */
export function subjectsOf(payload: unknown): { server?: string; backup?: string } {
  if (typeof payload !== 'object' || payload === null) return {};
  const { serverId, backupId } = payload as { serverId?: unknown; backupId?: unknown };
  return {
    ...(typeof serverId === 'string' ? { server: serverId } : {}),
    ...(typeof backupId === 'string' ? { backup: backupId } : {}),
  };
}

import type { Static, TSchema } from '@sinclair/typebox';
import type { JobKind, JobPayloads } from './job-kinds.ts';
import type { JobResult } from './job-observer.ts';

export interface JobContext<P> {
  id: number;
  payload: P;
  batch: string;
  /** 1 on the first try; more when an earlier worker died or the job was retried. */
  attempt: number;
  /** Aborted when this worker loses the job's lease (another worker may now own it). */
  signal: AbortSignal;
  /**
   * Renews the lease now and says whether this worker still holds the job. Call it right before
   * a step that must not run twice (a restore's swap): after a true, no other worker can claim
   * the job for a whole lease.
   */
  renewLease(): Promise<boolean>;
}

/** A TypeBox schema whose values are payloads of type `P`. */
export type PayloadSchema<P> = TSchema & { static: P };

/** True when each of A and B is assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * `schema`, as the schema of the payloads of `kind`'s jobs: the type refuses a schema that
 * describes more or fewer payloads than `JobPayloads[kind]` (job-kinds.ts), so that the two stay
 * one.
 */
export function payloadSchema<K extends JobKind, S extends TSchema>(
  _kind: K,
  schema: S,
  ..._exact: Same<Static<S>, JobPayloads[K]> extends true
    ? []
    : [mismatch: 'this schema does not describe the payloads of this kind (job-kinds.ts)']
): S {
  return schema;
}

export interface JobHandler<P> {
  /**
   * What a payload of this kind holds. A job whose payload does not match it fails at once, before
   * it runs, with a reason naming the kind and the first field that is wrong; without one, the
   * payload is taken as it is.
   */
  readonly payload?: PayloadSchema<P>;
  /**
   * Does the job. A failure that no later try can mend throws a PermanentJobError, one that
   * something could not be reached an UnreachableJobError (job-failure.ts); anything else is
   * tried again a few times.
   */
  run(job: JobContext<P>): Promise<void | JobResult>;
  /** Called once, when the job has failed for good; `reason` is fit to show the user. */
  fail(job: JobContext<P>, reason: string): Promise<void>;
}

export type JobHandlers = { [K in JobKind]: JobHandler<JobPayloads[K]> };

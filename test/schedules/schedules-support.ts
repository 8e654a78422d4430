/** What the schedule tests share: Pterodactyl's bodies and objects, and a client for one caller. */
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../support/harness.ts';
import { bearer } from '../support/harness.ts';

export interface TaskAttributes {
  id: number;
  sequence_id: number;
  action: string;
  payload: string;
  time_offset: number;
  is_queued: boolean;
  continue_on_failure: boolean;
  created_at: string;
  updated_at: string;
}

export interface ScheduleAttributes {
  id: number;
  name: string;
  cron: { day_of_week: string; day_of_month: string; month: string; hour: string; minute: string };
  is_active: boolean;
  is_processing: boolean;
  only_when_online: boolean;
  last_run_at: string | null;
  next_run_at: string | null;
  created_at: string;
  updated_at: string;
  relationships: {
    tasks: { object: 'list'; data: { object: 'schedule_task'; attributes: TaskAttributes }[] };
  };
}

export interface ErrorBody {
  errors: {
    code: string;
    status: string;
    detail: string;
    meta?: { source_field: string; rule: string; message: string };
  }[];
}

/** Pterodactyl's panel's body for a schedule: flat, the cron fields as strings. */
export function scheduleBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'nightly',
    is_active: true,
    only_when_online: false,
    minute: '0',
    hour: '3',
    day_of_month: '*',
    month: '*',
    day_of_week: '*',
    ...overrides,
  };
}

/** A backup task, last, at once. */
export function backupTask(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { action: 'backup', payload: '', time_offset: 0, continue_on_failure: false, ...overrides };
}

/** Requests to one server's schedules as one caller. */
export function schedulesClient(app: TestApp, token: string, server: string) {
  const base = `/api/client/servers/${server}/schedules`;
  const call = (method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) =>
    app.http.inject({
      method,
      url: `${base}${path}`,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
  return {
    base,
    list: () => call('GET', ''),
    create: (body: Record<string, unknown> = scheduleBody()) => call('POST', '', body),
    get: (id: number | string) => call('GET', `/${id}`),
    update: (id: number | string, body: Record<string, unknown>) => call('POST', `/${id}`, body),
    delete: (id: number | string) => call('DELETE', `/${id}`),
    execute: (id: number | string) => call('POST', `/${id}/execute`),
    createTask: (id: number | string, body: Record<string, unknown> = backupTask()) =>
      call('POST', `/${id}/tasks`, body),
    updateTask: (id: number | string, task: number | string, body: Record<string, unknown>) =>
      call('POST', `/${id}/tasks/${task}`, body),
    deleteTask: (id: number | string, task: number | string) => call('DELETE', `/${id}/tasks/${task}`),
  };
}

/** The schedule a 200 carries, after checking the status. */
export function scheduleOf(res: LightMyRequestResponse): ScheduleAttributes {
  if (res.statusCode !== 200) throw new Error(`expected 200, got ${res.statusCode}: ${res.body}`);
  const body = res.json<{ object: string; attributes: ScheduleAttributes }>();
  if (body.object !== 'server_schedule') throw new Error(`not a server_schedule: ${res.body}`);
  return body.attributes;
}

export function taskOf(res: LightMyRequestResponse): TaskAttributes {
  if (res.statusCode !== 200) throw new Error(`expected 200, got ${res.statusCode}: ${res.body}`);
  const body = res.json<{ object: string; attributes: TaskAttributes }>();
  if (body.object !== 'schedule_task') throw new Error(`not a schedule_task: ${res.body}`);
  return body.attributes;
}

/** The server's activity, oldest first, with properties parsed. */
export async function serverEvents(app: TestApp, serverId: string) {
  const rows = await app.db.kysely
    .selectFrom('activity_logs as l')
    .innerJoin('activity_log_subjects as s', 's.activity_log_id', 'l.id')
    .select(['l.event', 'l.batch', 'l.properties', 'l.actor_id'])
    .where('s.subject_type', '=', 'server')
    .where('s.subject_id', '=', serverId)
    .orderBy('l.id')
    .execute();
  return rows.map((row) => ({ ...row, properties: JSON.parse(row.properties) as Record<string, unknown> }));
}

/** The schedule.task jobs queued for a schedule, oldest first. */
export async function taskJobs(app: TestApp, scheduleId: number) {
  const rows = await app.db.kysely
    .selectFrom('jobs')
    .select(['id', 'state', 'payload', 'run_at', 'error'])
    .where('kind', '=', 'schedule.task')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      ...row,
      id: Number(row.id),
      payload: JSON.parse(row.payload) as { scheduleId: number; taskId: number },
    }))
    .filter((row) => row.payload.scheduleId === scheduleId);
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  ScheduleBodySchema,
  ScheduleListSchema,
  ScheduleParamsSchema,
  ScheduleResourceSchema,
  TaskBodySchema,
  TaskParamsSchema,
  TaskResourceSchema,
} from '../../schedules/schedule.schema.ts';
import { toScheduleResource, toTaskResource } from '../../schedules/schedule.transform.ts';
import type { ScheduleTask, ScheduleWithTasks } from '../../schedules/schedule.ts';
import { ServerParamsSchema } from '../../servers/server.schema.ts';
import type { Services } from '../../services.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { clientSchema, noContent } from '../client-route.ts';
import { authenticatedContextOf } from '../request-context.ts';
import { accessOf, can, idle, serverAccess, type AccessStep } from '../server-guard.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The schedule the path names, once `scheduleOf` found it on the server. */
    schedule: ScheduleWithTasks | null;
    /** The task the path names, once `taskOf` found it in the schedule. */
    scheduleTask: ScheduleTask | null;
  }
}

const tag = 'schedules';

/** A path's id, as the params schema left it (coerced to a number, or still its digits). */
function idParam(request: FastifyRequest, name: 'schedule' | 'task'): number | undefined {
  const value = Number((request.params as Record<string, unknown>)[name]);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/**
 * Pterodactyl's schedules under /api/client/servers/{server}/schedules. Each route checks, in the
 * reference panel's order: the server (404), the schedule and the task the path names (404), for
 * `execute` the server's state (409), the permission (403); then the body (422), then the rules
 * (400, 403, 422).
 */
export function serverScheduleRoutes(
  app: FastifyInstance,
  { schedules, scheduleRuns, access }: Pick<Services, 'schedules' | 'scheduleRuns' | 'access'>,
): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/api/client/servers/:server/schedules';

  /** 404 unless the path's `{schedule}` is one of this server's schedules. */
  const scheduleOf: AccessStep = async (serverAccess, request) => {
    const id = idParam(request, 'schedule');
    const found = id === undefined ? undefined : await schedules.find(serverAccess.server.id, id);
    if (found === undefined) throw new NotFoundError();
    request.schedule = found;
  };
  /** 404 unless the path's `{task}` is one of that schedule's tasks. */
  const taskOf: AccessStep = (_access, request) => {
    const id = idParam(request, 'task');
    const found = id === undefined ? undefined : schedules.findTask(scheduleOfRequest(request), id);
    if (found === undefined) throw new NotFoundError();
    request.scheduleTask = found;
  };

  typed.get(
    base,
    {
      schema: clientSchema(tag, "The server's schedules, each with its tasks (schedule.read)", {
        params: ServerParamsSchema,
        response: { 200: ScheduleListSchema },
      }),
      preValidation: serverAccess(access, can('schedule.read')),
    },
    async (request) => ({
      object: 'list' as const,
      data: (await schedules.list(accessOf(request))).map(toScheduleResource),
    }),
  );

  typed.post(
    base,
    {
      schema: clientSchema(tag, 'Create a schedule (schedule.create)', {
        params: ServerParamsSchema,
        body: ScheduleBodySchema,
        response: { 200: ScheduleResourceSchema },
      }),
      preValidation: serverAccess(access, can('schedule.create')),
    },
    async (request) =>
      toScheduleResource(
        await schedules.create(authenticatedContextOf(request), accessOf(request), request.body),
      ),
  );

  typed.get(
    `${base}/:schedule`,
    {
      schema: clientSchema(tag, 'One schedule, with its tasks (schedule.read)', {
        params: ScheduleParamsSchema,
        response: { 200: ScheduleResourceSchema },
      }),
      preValidation: serverAccess(access, scheduleOf, can('schedule.read')),
    },
    (request) => toScheduleResource(scheduleOfRequest(request)),
  );

  typed.post(
    `${base}/:schedule`,
    {
      schema: clientSchema(
        tag,
        'Change a schedule: the whole body again, as to create one (schedule.update)',
        {
          params: ScheduleParamsSchema,
          body: ScheduleBodySchema,
          response: { 200: ScheduleResourceSchema },
        },
      ),
      preValidation: serverAccess(access, scheduleOf, can('schedule.update')),
    },
    async (request) =>
      toScheduleResource(
        await schedules.update(
          authenticatedContextOf(request),
          accessOf(request),
          scheduleOfRequest(request),
          request.body,
        ),
      ),
  );

  typed.delete(
    `${base}/:schedule`,
    {
      schema: clientSchema(tag, 'Delete a schedule and its tasks (schedule.delete)', {
        params: ScheduleParamsSchema,
      }),
      preValidation: serverAccess(access, scheduleOf, can('schedule.delete')),
    },
    (request, reply) =>
      noContent(reply, schedules.delete(authenticatedContextOf(request), scheduleOfRequest(request))),
  );

  typed.post(
    `${base}/:schedule/execute`,
    {
      schema: clientSchema(
        tag,
        'Run a schedule now, even an inactive one (schedule.update): 202, its tasks run in the background',
        {
          params: ScheduleParamsSchema,
          response: { 202: { type: 'null', description: 'The run is queued.' } },
        },
      ),
      preValidation: serverAccess(access, scheduleOf, idle(access), can('schedule.update')),
    },
    async (request, reply) => {
      await scheduleRuns.execute(authenticatedContextOf(request), scheduleOfRequest(request));
      return reply.code(202).send();
    },
  );

  typed.post(
    `${base}/:schedule/tasks`,
    {
      schema: clientSchema(tag, 'Add a task to a schedule; at most 10 (schedule.update)', {
        params: ScheduleParamsSchema,
        body: TaskBodySchema,
        response: { 200: TaskResourceSchema },
      }),
      preValidation: serverAccess(access, scheduleOf, can('schedule.update')),
    },
    async (request) =>
      toTaskResource(
        await schedules.createTask(
          authenticatedContextOf(request),
          accessOf(request),
          scheduleOfRequest(request),
          request.body,
        ),
      ),
  );

  typed.post(
    `${base}/:schedule/tasks/:task`,
    {
      schema: clientSchema(tag, 'Change a task (schedule.update)', {
        params: TaskParamsSchema,
        body: TaskBodySchema,
        response: { 200: TaskResourceSchema },
      }),
      preValidation: serverAccess(access, scheduleOf, taskOf, can('schedule.update')),
    },
    async (request) =>
      toTaskResource(
        await schedules.updateTask(
          authenticatedContextOf(request),
          accessOf(request),
          scheduleOfRequest(request),
          taskOfRequest(request),
          request.body,
        ),
      ),
  );

  typed.delete(
    `${base}/:schedule/tasks/:task`,
    {
      schema: clientSchema(tag, 'Delete a task; the tasks after it move up (schedule.update)', {
        params: TaskParamsSchema,
      }),
      preValidation: serverAccess(access, scheduleOf, taskOf, can('schedule.update')),
    },
    (request, reply) =>
      noContent(
        reply,
        schedules.deleteTask(
          authenticatedContextOf(request),
          accessOf(request),
          scheduleOfRequest(request),
          taskOfRequest(request),
        ),
      ),
  );
}

function scheduleOfRequest(request: FastifyRequest): ScheduleWithTasks {
  if (request.schedule === null) throw new Error(`${request.routeOptions.url} has no scheduleOf step`);
  return request.schedule;
}

function taskOfRequest(request: FastifyRequest): ScheduleTask {
  if (request.scheduleTask === null) throw new Error(`${request.routeOptions.url} has no taskOf step`);
  return request.scheduleTask;
}

import { Type, type Static } from '@sinclair/typebox';
import { IGNORED_LIMITS } from '../backups/ignore-patterns.ts';
import { ServerParamsSchema } from '../servers/server.schema.ts';
import { listSchema } from '../shared/page.ts';
import { MultiLineText, SingleLineText } from '../shared/text.ts';
import { MAX_TIME_OFFSET, TASK_ACTIONS } from './schedule.ts';

/** An id in a path: decimal digits (anything else names no schedule or task: 404). */
const PathId = (description: string) =>
  Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

export const ScheduleParamsSchema = Type.Object({
  ...ServerParamsSchema.properties,
  schedule: PathId('The schedule id.'),
});
export type ScheduleParams = Static<typeof ScheduleParamsSchema>;

export const TaskParamsSchema = Type.Object({
  ...ScheduleParamsSchema.properties,
  task: PathId('The task id.'),
});
export type TaskParams = Static<typeof TaskParamsSchema>;

const CronField = (description: string) => SingleLineText({ minLength: 1, maxLength: 191, description });

/** Pterodactyl's body, for creating a schedule and (all of it again) for changing one. */
export const ScheduleBodySchema = Type.Object({
  name: SingleLineText({ minLength: 1, maxLength: 191 }),
  is_active: Type.Boolean({
    default: false,
    description: 'Whether the schedule runs by itself (as Pterodactyl, false when left out).',
  }),
  only_when_online: Type.Boolean({
    default: false,
    description:
      'Skip a run whose server is busy (installing, suspended, restoring a backup, being transferred) when it starts, rather than let its tasks fail: Aerie has no daemon, so a server counts as online when it has no status.',
  }),
  minute: CronField('Cron minute field: `0`, `*/15`, `0,30`, `5-10`.'),
  hour: CronField('Cron hour field.'),
  day_of_month: CronField('Cron day-of-month field (`L`: the last day).'),
  month: CronField('Cron month field (`1`-`12` or `JAN`-`DEC`).'),
  day_of_week: CronField('Cron day-of-week field (`0`-`7`, Sunday being 0 and 7, or `MON`-`SUN`).'),
});
export type ScheduleBody = Static<typeof ScheduleBodySchema>;

const IGNORED_MESSAGE = `The :field field must be null or, for a backup, the files to leave out: at most ${IGNORED_LIMITS.patterns} patterns of at most ${IGNORED_LIMITS.patternCharacters} characters, ${IGNORED_LIMITS.characters} characters in all, without control characters.`;

/** Pterodactyl's task body. */
export const TaskBodySchema = Type.Object({
  action: Type.Union(
    TASK_ACTIONS.map((action) => Type.Literal(action)),
    {
      description:
        '`backup` only: Aerie controls no server process, so `power` and `command` tasks are refused (422).',
    },
  ),
  payload: Type.Optional(
    Type.Union([MultiLineText({ format: 'backup-ignored' }), Type.Null()], {
      'x-rule': 'ignored',
      'x-message': IGNORED_MESSAGE,
      description:
        'For a backup: the files to leave out, one pattern a line, as in a .gitignore; may be empty or null.',
    }),
  ),
  time_offset: Type.Integer({
    minimum: 0,
    maximum: MAX_TIME_OFFSET,
    description: 'Seconds to wait after the previous task (for the first task, after the run starts).',
  }),
  sequence_id: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        'Where the task goes: the tasks from this place on move one down. Left out (or past the end): last.',
    }),
  ),
  continue_on_failure: Type.Boolean({
    default: false,
    description: 'Go on with the next task if this one fails (otherwise the run stops there).',
  }),
});
export type TaskBody = Static<typeof TaskBodySchema>;

const WireTimeOrNull = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const TaskResourceSchema = Type.Object({
  object: Type.Literal('schedule_task'),
  attributes: Type.Object({
    id: Type.Integer(),
    sequence_id: Type.Integer(),
    action: Type.String(),
    payload: Type.String(),
    time_offset: Type.Integer(),
    is_queued: Type.Boolean({ description: 'Whether the task waits, in a run, for its turn.' }),
    continue_on_failure: Type.Boolean(),
    created_at: Type.String(),
    updated_at: Type.String(),
  }),
});
export type TaskResource = Static<typeof TaskResourceSchema>;

export const ScheduleResourceSchema = Type.Object({
  object: Type.Literal('server_schedule'),
  attributes: Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    cron: Type.Object({
      day_of_week: Type.String(),
      day_of_month: Type.String(),
      month: Type.String(),
      hour: Type.String(),
      minute: Type.String(),
    }),
    is_active: Type.Boolean(),
    is_processing: Type.Boolean({ description: 'Whether a run is in progress.' }),
    only_when_online: Type.Boolean(),
    last_run_at: WireTimeOrNull('When the last run started; null before the first.'),
    next_run_at: WireTimeOrNull(
      'When the schedule next runs (if active), in UTC; the expression is read in AERIE_TIMEZONE.',
    ),
    created_at: Type.String(),
    updated_at: Type.String(),
    relationships: Type.Object({ tasks: listSchema(TaskResourceSchema) }),
  }),
});
export type ScheduleResource = Static<typeof ScheduleResourceSchema>;

export const ScheduleListSchema = listSchema(ScheduleResourceSchema);
export type ScheduleList = Static<typeof ScheduleListSchema>;

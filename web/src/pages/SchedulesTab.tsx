import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, errorMessage } from '../api/client.ts';
import { keys, serverPath, useSchedules } from '../api/hooks.ts';
import type { ScheduleAttributes, ScheduleTask, Server } from '../api/types.ts';
import { ConfirmDialog } from '../components/ConfirmDialog.tsx';
import { RequestError } from '../components/Form.tsx';
import { IgnoredPatterns } from '../components/IgnoredPatterns.tsx';
import { useNotify } from '../components/Notices.tsx';
import { Loading } from '../components/Page.tsx';
import { Time } from '../components/Time.tsx';
import { cronExpression, cronWords } from '../cron.ts';
import { plural } from '../format.ts';
import type { Can } from '../permissions.ts';
import { ScheduleDialog } from './ScheduleDialog.tsx';
import { TaskDialog } from './TaskDialog.tsx';

/** The most tasks a schedule may have (the API's limit). */
const TASK_LIMIT = 10;

type TaskAttributes = ScheduleTask['attributes'];

/** The ignore patterns of a backup task's payload, one a line. */
const patternsOf = (payload: string) =>
  payload
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

/** When a schedule runs: in words when they say it plainly, with the expression itself. */
function CronSummary({ cron }: { cron: ScheduleAttributes['cron'] }) {
  const words = cronWords(cron);
  const expression = cronExpression(cron);
  return (
    <span className="schedule-cron">
      {words === null ? null : <span className="strong">{words}</span>}{' '}
      <code title="The cron expression: minute, hour, day of month, month, day of week">{expression}</code>
    </span>
  );
}

function taskSummary(task: TaskAttributes, first: boolean): string {
  const wait =
    task.time_offset === 0
      ? 'at once'
      : `${plural(task.time_offset, 'second')} after ${first ? 'the run starts' : 'the task before'}`;
  const what = task.action === 'backup' ? 'Back up the server' : `${task.action} (not run by Aerie)`;
  return `${what}, ${wait}; ${task.continue_on_failure ? 'continues on failure' : 'stops the run if it fails'}`;
}

interface ScheduleCardProps {
  schedule: ScheduleAttributes;
  can: Can;
  busy: boolean;
  onEdit: () => void;
  onDelete: () => void;
  onRun: () => void;
  running: boolean;
  onAddTask: () => void;
  onEditTask: (task: TaskAttributes) => void;
  onDeleteTask: (task: TaskAttributes) => void;
}

function ScheduleCard({
  schedule,
  can,
  busy,
  onEdit,
  onDelete,
  onRun,
  running,
  onAddTask,
  onEditTask,
  onDeleteTask,
}: ScheduleCardProps) {
  const tasks = schedule.relationships.tasks.data.map((task) => task.attributes);
  const headingId = `schedule-${schedule.id}-name`;
  const runReason =
    tasks.length === 0
      ? 'Add a task first'
      : schedule.is_processing
        ? 'It is running'
        : busy
          ? 'The server is busy'
          : undefined;
  return (
    <li className="schedule" data-schedule={schedule.id} aria-label={`Schedule ${schedule.name}`}>
      <div className="schedule-head">
        <h3 id={headingId} className="schedule-name">
          {schedule.name}
        </h3>
        <span className={schedule.is_active ? 'badge status-ready' : 'badge'}>
          {schedule.is_active ? 'Active' : 'Inactive'}
        </span>
        {schedule.is_processing ? <span className="badge status-installing">Running</span> : null}
        {schedule.only_when_online ? <span className="badge">Only when online</span> : null}
      </div>
      <dl className="pairs schedule-facts">
        <dt>When</dt>
        <dd>
          <CronSummary cron={schedule.cron} />
        </dd>
        <dt>Next run</dt>
        <dd>
          {schedule.is_active && schedule.next_run_at !== null ? (
            <Time iso={schedule.next_run_at} exact />
          ) : (
            <span className="muted">
              {schedule.is_active ? 'None to come' : 'None: the schedule is inactive'}
            </span>
          )}
        </dd>
        <dt>Last run</dt>
        <dd>
          {schedule.last_run_at === null ? (
            <span className="muted">Never</span>
          ) : (
            <Time iso={schedule.last_run_at} />
          )}
        </dd>
      </dl>
      <div className="row-actions schedule-actions">
        {can('schedule.update') ? (
          <button
            type="button"
            onClick={onRun}
            disabled={runReason !== undefined || running}
            title={runReason}
            aria-describedby={headingId}
          >
            {running ? 'Starting…' : 'Run now'}
          </button>
        ) : null}
        {can('schedule.update') ? (
          <button type="button" onClick={onEdit} aria-label={`Edit schedule ${schedule.name}`}>
            Edit
          </button>
        ) : null}
        {can('schedule.delete') ? (
          <button
            type="button"
            className="danger"
            onClick={onDelete}
            aria-label={`Delete schedule ${schedule.name}`}
          >
            Delete
          </button>
        ) : null}
      </div>
      <section className="schedule-tasks" aria-label={`Tasks of ${schedule.name}`}>
        <h4>Tasks</h4>
        {tasks.length === 0 ? (
          <p className="muted small">No tasks yet: the schedule does nothing until it has one.</p>
        ) : (
          <ol className="tasks">
            {tasks.map((task) => (
              <li key={task.id} className="task" aria-label={`Task ${task.sequence_id}`}>
                <div className="task-main">
                  <span>{taskSummary(task, task.sequence_id === 1)}</span>
                  {task.is_queued ? <span className="badge status-installing">Queued</span> : null}
                  {can('schedule.update') ? (
                    <span className="row-actions">
                      <button
                        type="button"
                        onClick={() => onEditTask(task)}
                        aria-label={`Edit task ${task.sequence_id}`}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        className="danger"
                        onClick={() => onDeleteTask(task)}
                        aria-label={`Delete task ${task.sequence_id}`}
                      >
                        Delete
                      </button>
                    </span>
                  ) : null}
                </div>
                <IgnoredPatterns patterns={patternsOf(task.payload)} />
              </li>
            ))}
          </ol>
        )}
        {can('schedule.update') ? (
          <div>
            <button
              type="button"
              onClick={onAddTask}
              disabled={tasks.length >= TASK_LIMIT}
              title={tasks.length >= TASK_LIMIT ? `A schedule may have ${TASK_LIMIT} tasks` : undefined}
              aria-label={`Add a task to ${schedule.name}`}
            >
              Add task
            </button>
          </div>
        ) : null}
      </section>
    </li>
  );
}

type Editing =
  | { kind: 'schedule'; schedule: ScheduleAttributes | null }
  | { kind: 'task'; schedule: ScheduleAttributes; task: TaskAttributes | null }
  | { kind: 'delete-schedule'; schedule: ScheduleAttributes }
  | { kind: 'delete-task'; schedule: ScheduleAttributes; task: TaskAttributes };

interface SchedulesTabProps {
  id: string;
  server: Server;
  can: Can;
}

/** A server's schedules: when each runs, its backup tasks, running one now, and changing them. */
export function SchedulesTab({ id, server, can }: SchedulesTabProps) {
  const client = useQueryClient();
  const notify = useNotify();
  const schedules = useSchedules(id);
  const [editing, setEditing] = useState<Editing | null>(null);
  const busy = server.attributes.status !== null;
  const refresh = () => void client.invalidateQueries({ queryKey: keys.schedules(id) });

  const run = useMutation({
    mutationFn: (schedule: ScheduleAttributes) =>
      api(`${serverPath(id)}/schedules/${schedule.id}/execute`, { method: 'POST' }),
    onSuccess: (_result, schedule) => {
      notify(`Started "${schedule.name}": its tasks run in the background.`);
      refresh();
      void client.invalidateQueries({ queryKey: keys.backups(id) });
    },
    onError: (error) => notify(errorMessage(error), 'error'),
  });

  const list = schedules.data?.data.map((schedule) => schedule.attributes);
  return (
    <section aria-labelledby="schedules-heading">
      <div className="section-head">
        <h2 id="schedules-heading">Schedules</h2>
        {can('schedule.create') ? (
          <button
            type="button"
            className="primary"
            onClick={() => setEditing({ kind: 'schedule', schedule: null })}
          >
            Create schedule
          </button>
        ) : null}
      </div>
      {schedules.isPending ? <Loading what="schedules" /> : null}
      <RequestError error={schedules.error} />
      {list === undefined ? null : list.length === 0 ? (
        <p className="empty">
          No schedules yet. A schedule makes backups by itself, at the times you choose.
        </p>
      ) : (
        <ul className="schedules">
          {list.map((schedule) => (
            <ScheduleCard
              key={schedule.id}
              schedule={schedule}
              can={can}
              busy={busy}
              running={run.isPending && run.variables.id === schedule.id}
              onRun={() => run.mutate(schedule)}
              onEdit={() => setEditing({ kind: 'schedule', schedule })}
              onDelete={() => setEditing({ kind: 'delete-schedule', schedule })}
              onAddTask={() => setEditing({ kind: 'task', schedule, task: null })}
              onEditTask={(task) => setEditing({ kind: 'task', schedule, task })}
              onDeleteTask={(task) => setEditing({ kind: 'delete-task', schedule, task })}
            />
          ))}
        </ul>
      )}
      {editing?.kind === 'schedule' ? (
        <ScheduleDialog id={id} schedule={editing.schedule} onClose={() => setEditing(null)} />
      ) : null}
      {editing?.kind === 'task' ? (
        <TaskDialog
          id={id}
          schedule={editing.schedule}
          task={editing.task}
          onClose={() => setEditing(null)}
        />
      ) : null}
      {editing?.kind === 'delete-schedule' ? (
        <ConfirmDialog
          title={`Delete ${editing.schedule.name}?`}
          message={
            <p>
              The schedule and its {plural(editing.schedule.relationships.tasks.data.length, 'task')} are
              deleted. The backups it made are kept.
            </p>
          }
          confirmLabel="Delete schedule"
          danger
          onClose={() => setEditing(null)}
          onConfirm={async () => {
            await api(`${serverPath(id)}/schedules/${editing.schedule.id}`, { method: 'DELETE' });
            await client.invalidateQueries({ queryKey: keys.schedules(id) });
            notify(`Deleted schedule "${editing.schedule.name}".`);
          }}
        />
      ) : null}
      {editing?.kind === 'delete-task' ? (
        <ConfirmDialog
          title={`Delete task ${editing.task.sequence_id} of ${editing.schedule.name}?`}
          message={<p>The tasks after it move up one place.</p>}
          confirmLabel="Delete task"
          danger
          onClose={() => setEditing(null)}
          onConfirm={async () => {
            const { schedule, task } = editing;
            await api(`${serverPath(id)}/schedules/${schedule.id}/tasks/${task.id}`, { method: 'DELETE' });
            await client.invalidateQueries({ queryKey: keys.schedules(id) });
            notify(`Deleted task ${task.sequence_id} of "${schedule.name}".`);
          }}
        />
      ) : null}
    </section>
  );
}

import { ApiError } from '../api/client.ts';
import { useServerEvents } from '../api/events.ts';
import { useBackups, useServer } from '../api/hooks.ts';
import { ActivityFeed } from '../components/ActivityFeed.tsx';
import { RequestError } from '../components/Form.tsx';
import { Loading, Page } from '../components/Page.tsx';
import { ProgressBar } from '../components/ProgressBar.tsx';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { permissionsOf } from '../permissions.ts';
import { Link } from '../router.tsx';
import { BackupsTab } from './BackupsTab.tsx';
import { SchedulesTab } from './SchedulesTab.tsx';
import { useRestoreFinishedNotice } from './notices.ts';
import { SubusersTab } from './SubusersTab.tsx';

const TABS = [
  { tab: 'backups', label: 'Backups', permission: 'backup.read' },
  { tab: 'schedules', label: 'Schedules', permission: 'schedule.read' },
  { tab: 'activity', label: 'Activity', permission: 'activity.read' },
  { tab: 'users', label: 'Users', permission: 'user.read' },
] as const;

/** The banner of a server that is restoring: on every tab, with the restore's progress if known. */
function RestoringBanner({
  id,
  canReadBackups,
  live,
}: {
  id: string;
  canReadBackups: boolean;
  live: boolean;
}) {
  const backups = useBackups(id, 1, { enabled: canReadBackups, poll: !live });
  const restoring = backups.data?.data.find((backup) => backup.attributes.progress?.operation === 'restore');
  const progress = restoring?.attributes.progress ?? null;
  return (
    <div className="banner banner-busy" role="status" data-testid="restoring-banner">
      <p>
        <strong>
          This server is restoring a backup{restoring === undefined ? '' : `: ${restoring.attributes.name}`}.
        </strong>{' '}
        Backups cannot be made or restored until it has finished.
      </p>
      {restoring !== undefined && progress !== null ? (
        <ProgressBar progress={progress} label={`Restore of ${restoring.attributes.name}`} />
      ) : (
        <progress aria-label="Restore in progress" />
      )}
    </div>
  );
}

export function ServerPage({ id, tab }: { id: string; tab: string | null }) {
  const { live } = useServerEvents(id, true);
  const server = useServer(id, { poll: !live });
  useRestoreFinishedNotice(id, server.data);

  if (server.data === undefined) {
    if (server.error instanceof ApiError && server.error.status === 404)
      return (
        <Page title="Server not found">
          <p>
            There is no such server, or it is not yours. <Link to="/servers">Back to your servers</Link>.
          </p>
        </Page>
      );
    return (
      <Page title="Server">
        {server.error === null ? <Loading what="the server" /> : <RequestError error={server.error} />}
      </Page>
    );
  }

  const s = server.data.attributes;
  const can = permissionsOf(server.data.meta.user_permissions);
  const tabs = TABS.filter((item) => can(item.permission));
  const current = tab ?? tabs[0]?.tab ?? null;
  const allowed = tabs.some((item) => item.tab === current);
  const base = `/servers/${encodeURIComponent(id)}`;

  return (
    <Page
      title={s.name}
      aside={
        <div className="page-aside">
          <code>{s.identifier}</code> <StatusBadge status={s.status} />
          <span
            className={live ? 'live on' : 'live'}
            title={live ? 'Updates arrive as they happen' : 'Updates are fetched every few seconds'}
          >
            {live ? 'Live' : 'Polling'}
          </span>
        </div>
      }
    >
      <p className="breadcrumbs">
        <Link to="/servers">Servers</Link> / {s.name}
      </p>
      {s.status === 'restoring_backup' ? (
        <RestoringBanner id={id} canReadBackups={can('backup.read')} live={live} />
      ) : null}
      {tabs.length === 0 ? (
        <p className="empty">
          Your permissions on this server do not include its backups, schedules, activity or users.
        </p>
      ) : (
        <nav className="tabs" aria-label="Server sections">
          {tabs.map((item) => (
            <Link
              key={item.tab}
              to={item.tab === 'backups' ? base : `${base}/${item.tab}`}
              current={item.tab === current}
            >
              {item.label}
            </Link>
          ))}
        </nav>
      )}
      {current === null ? null : !allowed ? (
        <p className="empty">Your permissions on this server do not include this section.</p>
      ) : current === 'backups' ? (
        <BackupsTab id={id} server={server.data} can={can} live={live} />
      ) : current === 'schedules' ? (
        <SchedulesTab id={id} server={server.data} can={can} />
      ) : current === 'activity' ? (
        <ActivityFeed scope={id} label="Server activity" />
      ) : (
        <SubusersTab id={id} can={can} />
      )}
    </Page>
  );
}

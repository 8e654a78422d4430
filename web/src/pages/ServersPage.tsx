import { useServers } from '../api/hooks.ts';
import { BackupWarnings, LastSuccessfulBackup } from '../components/BackupHealth.tsx';
import { RequestError } from '../components/Form.tsx';
import { Loading, Page } from '../components/Page.tsx';
import { Pagination } from '../components/Pagination.tsx';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { formatBytes } from '../format.ts';
import { Link, useLocation, withParams } from '../router.tsx';

/** What a backup cell shows to a subuser without `backup.read`. */
function NotShown() {
  return (
    <span className="muted">
      <span aria-hidden="true">—</span>
      <span className="visually-hidden">not shown to you</span>
    </span>
  );
}

function pageOf(value: string | null): number {
  const page = Number(value);
  return Number.isInteger(page) && page > 0 ? page : 1;
}

export function ServersPage() {
  const location = useLocation();
  const page = pageOf(location.search.get('page'));
  const servers = useServers(page);
  return (
    <Page title="Servers">
      {servers.isPending ? <Loading what="servers" /> : null}
      <RequestError error={servers.error} />
      {servers.data === undefined ? null : servers.data.data.length === 0 ? (
        <p className="empty">
          You have no servers yet. An administrator can make one with <code>aerie server create</code>.
        </p>
      ) : (
        <>
          <table className="table servers">
            <caption className="visually-hidden">Your servers</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Identifier</th>
                <th scope="col">Status</th>
                <th scope="col">Your role</th>
                <th scope="col">Last successful backup</th>
                <th scope="col">Backups</th>
                <th scope="col">Backup size</th>
              </tr>
            </thead>
            <tbody>
              {servers.data.data.map(({ attributes: server, meta }) => (
                <tr key={server.uuid} data-server={server.identifier}>
                  <td data-label="Name">
                    <Link to={`/servers/${server.identifier}`} className="strong">
                      {server.name}
                    </Link>
                    {server.description === '' ? null : (
                      <div className="muted small">{server.description}</div>
                    )}
                  </td>
                  <td data-label="Identifier">
                    <code>{server.identifier}</code>
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={server.status} />
                  </td>
                  <td data-label="Your role">
                    {meta.is_server_owner
                      ? 'Owner'
                      : meta.user_permissions.includes('*')
                        ? 'Administrator'
                        : 'Subuser'}
                  </td>
                  <td data-label="Last successful backup">
                    {meta.backup_summary === null ? (
                      <NotShown />
                    ) : (
                      <>
                        <LastSuccessfulBackup summary={meta.backup_summary} />
                        <BackupWarnings summary={meta.backup_summary} />
                      </>
                    )}
                  </td>
                  <td data-label="Backups">
                    {meta.backup_summary === null ? (
                      <NotShown />
                    ) : (
                      `${meta.backup_summary.count} of ${server.feature_limits.backups}`
                    )}
                  </td>
                  <td data-label="Backup size">
                    {meta.backup_summary === null ? <NotShown /> : formatBytes(meta.backup_summary.bytes)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {servers.data.meta?.pagination === undefined ||
          servers.data.meta.pagination.total_pages <= 1 ? null : (
            <Pagination
              meta={servers.data.meta.pagination}
              hrefFor={(p) => withParams(location, { page: p === 1 ? null : p })}
              noun="server"
            />
          )}
        </>
      )}
    </Page>
  );
}

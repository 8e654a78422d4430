/** The panel's server state: one TanStack Query hook per resource of the client API. */
import { keepPreviousData, useQuery, type QueryClient } from '@tanstack/react-query';
import { api, query } from './client.ts';
import type {
  Account,
  ActivityLog,
  ApiKey,
  Backup,
  BackupAttributes,
  List,
  RetentionPolicy,
  RetentionPreview,
  Schedule,
  Server,
  Subuser,
} from './types.ts';

export const keys = {
  account: ['account'] as const,
  activity: (scope: string) => ['activity', scope] as const,
  apiKeys: ['api-keys'] as const,
  servers: ['servers'] as const,
  server: (id: string) => ['server', id] as const,
  backups: (id: string) => ['backups', id] as const,
  subusers: (id: string) => ['subusers', id] as const,
  schedules: (id: string) => ['schedules', id] as const,
  retention: (id: string) => ['retention', id] as const,
};

export const serverPath = (id: string) => `/api/client/servers/${encodeURIComponent(id)}`;

export function useAccount() {
  return useQuery({ queryKey: keys.account, queryFn: () => api<Account>('/api/client/account') });
}

export interface ActivityParams {
  event: string;
  ip: string;
  page: number;
  perPage: number;
}

/** A feed: the account's (`/api/client/activity`) or a server's. */
/** `scope`: 'account', or a server's identifier. */
export function useActivity(scope: string, params: ActivityParams) {
  const base = scope === 'account' ? '/api/client/activity' : `${serverPath(scope)}/activity`;
  return useQuery({
    queryKey: [...keys.activity(scope), params],
    queryFn: () =>
      api<List<ActivityLog>>(
        base +
          query({
            'filter[event]': params.event,
            'filter[ip]': params.ip,
            page: params.page,
            per_page: params.perPage,
          }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useApiKeys() {
  return useQuery({
    queryKey: keys.apiKeys,
    queryFn: () => api<List<ApiKey>>('/api/client/account/api-keys'),
  });
}

const isBusy = (server: Server) => server.attributes.status !== null;

export function useServers(page: number) {
  return useQuery({
    queryKey: [...keys.servers, page],
    queryFn: () => api<List<Server>>(`/api/client${query({ page, per_page: 25 })}`),
    placeholderData: keepPreviousData,
    // No event stream covers the whole list: look again now and then, often while one is busy.
    refetchInterval: (q) => (q.state.data?.data.some(isBusy) ? 2000 : 15_000),
  });
}

export function useServer(id: string, options: { poll: boolean }) {
  return useQuery({
    queryKey: keys.server(id),
    queryFn: () => api<Server>(serverPath(id)),
    refetchInterval: (q) =>
      options.poll && q.state.data !== undefined && isBusy(q.state.data) ? 2000 : false,
  });
}

export function isInProgress(backup: BackupAttributes): boolean {
  return backup.completed_at === null || (backup.progress !== undefined && backup.progress !== null);
}

export function useBackups(id: string, page: number, options: { enabled: boolean; poll: boolean }) {
  return useQuery({
    queryKey: [...keys.backups(id), page],
    queryFn: () => api<List<Backup>>(`${serverPath(id)}/backups${query({ page, per_page: 20 })}`),
    enabled: options.enabled,
    placeholderData: keepPreviousData,
    refetchInterval: (q) =>
      options.poll && q.state.data?.data.some((backup) => isInProgress(backup.attributes)) ? 1500 : false,
  });
}

export function useSubusers(id: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.subusers(id),
    queryFn: () => api<List<Subuser>>(`${serverPath(id)}/users`),
    enabled,
  });
}

/** A server's schedules; read again every few seconds while one of them runs. */
export function useSchedules(id: string) {
  return useQuery({
    queryKey: keys.schedules(id),
    queryFn: () => api<List<Schedule>>(`${serverPath(id)}/schedules`),
    refetchInterval: (q) =>
      q.state.data?.data.some((schedule) => schedule.attributes.is_processing) ? 2000 : false,
  });
}

export function useRetentionPolicy(id: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.retention(id),
    queryFn: () => api<RetentionPolicy>(`${serverPath(id)}/backups/retention`),
    enabled,
  });
}

/** The rules of a policy, as the preview's query takes them: a count for each rule that is on. */
export type RetentionRules = Partial<Record<RetentionRule, number>>;

export const RETENTION_RULES = [
  'keep_last',
  'keep_hourly',
  'keep_daily',
  'keep_weekly',
  'keep_monthly',
  'keep_yearly',
] as const;

export type RetentionRule = (typeof RETENTION_RULES)[number];

/**
 * What `rules` would keep and delete now. With no rule on, it asks for `keep_last=0`: a policy
 * that keeps everything (an empty query would preview the saved policy instead).
 */
export function useRetentionPreview(id: string, rules: RetentionRules | null) {
  const asked = rules === null || Object.keys(rules).length > 0 ? rules : { keep_last: 0 };
  return useQuery({
    queryKey: [...keys.retention(id), 'preview', asked],
    queryFn: ({ signal }) =>
      api<RetentionPreview>(`${serverPath(id)}/backups/retention/preview${query(asked ?? {})}`, { signal }),
    enabled: asked !== null,
    placeholderData: keepPreviousData,
  });
}

/** Changes one backup wherever a page of the server's backups holds it. */
export function updateBackup(
  client: QueryClient,
  serverId: string,
  uuid: string,
  change: (backup: BackupAttributes) => BackupAttributes,
): boolean {
  let found = false;
  client.setQueriesData<List<Backup>>({ queryKey: keys.backups(serverId) }, (list) => {
    if (list === undefined) return list;
    return {
      ...list,
      data: list.data.map((backup) => {
        if (backup.attributes.uuid !== uuid) return backup;
        found = true;
        return { ...backup, attributes: change(backup.attributes) };
      }),
    };
  });
  return found;
}

/** Sets a server's status in its own query and in the server list. */
export function updateServerStatus(
  client: QueryClient,
  serverId: string,
  status: Server['attributes']['status'],
) {
  const change = (server: Server): Server =>
    server.attributes.uuid === serverId || server.attributes.identifier === serverId
      ? { ...server, attributes: { ...server.attributes, status } }
      : server;
  client.setQueryData<Server>(keys.server(serverId), (server) =>
    server === undefined ? server : change(server),
  );
  client.setQueriesData<List<Server>>({ queryKey: keys.servers }, (list) =>
    list === undefined ? list : { ...list, data: list.data.map(change) },
  );
}

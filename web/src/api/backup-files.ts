/**
 * Looking inside a backup: a directory's entries a page at a time, a signed link to one
 * file (a directory: a .tar.gz of it), and the paths in the backup the panel names them by.
 */
import { useQuery } from '@tanstack/react-query';
import { api, query } from './client.ts';
import { serverPath } from './hooks.ts';
import type { paths } from './openapi.gen.ts';
import type { Backup } from './types.ts';

type Operation<Path extends keyof paths> = paths[Path]['get'];

/** A page of a backup's directory, with the directory it lists, normalized (`meta.directory`). */
export type BackupFileList = NonNullable<
  Operation<'/api/client/servers/{server}/backups/{backup}/files/list'>['responses'][200]['content']['application/json']
>;

/** One entry of a backup's directory. */
export type BackupFile = BackupFileList['data'][number]['attributes'];

type SignedUrl =
  Operation<'/api/client/servers/{server}/backups/{backup}/files/download'>['responses'][200]['content']['application/json'];

const backupBase = (serverId: string, uuid: string) =>
  `${serverPath(serverId)}/backups/${encodeURIComponent(uuid)}`;

/**
 * One backup of the server. `known` (the backup as a page of the list holds it) is shown at once;
 * a backup the list shown does not hold (an address opened from elsewhere) is asked for.
 */
export function useBackup(serverId: string, uuid: string, known: Backup | undefined) {
  return useQuery({
    // Not under keys.backups: those queries hold pages of the list, and are changed as lists.
    queryKey: ['backup', serverId, uuid],
    queryFn: () => api<Backup>(backupBase(serverId, uuid)),
    initialData: known,
    // What the list holds is as fresh as the list: it is not asked for again.
    staleTime: known === undefined ? 0 : Number.POSITIVE_INFINITY,
  });
}

/** A page of `directory` in the backup (a path from its root: `/`, `/world`). */
export function useBackupFiles(serverId: string, uuid: string, directory: string, page: number) {
  return useQuery({
    queryKey: ['backup-files', serverId, uuid, directory, page],
    queryFn: ({ signal }) =>
      api<BackupFileList>(`${backupBase(serverId, uuid)}/files/list${query({ directory, page })}`, {
        signal,
      }),
    // What a backup holds never changes: a directory seen once is shown again as it was.
    staleTime: Number.POSITIVE_INFINITY,
  });
}

/** A link that downloads `file` of the backup (a directory as a .tar.gz) without a token, for a while. */
export async function backupFileLink(serverId: string, uuid: string, file: string): Promise<string> {
  const link = await api<SignedUrl>(`${backupBase(serverId, uuid)}/files/download${query({ file })}`);
  return link.attributes.url;
}

/**
 * A path in a backup as the API names it: `/`-separated from the backup's root, without empty or
 * `.` parts (`world//region/` is `/world/region`). `..` is left for the API to refuse.
 */
export function normalizePath(path: string): string {
  return `/${path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/')}`;
}

/** The path of `name` in `directory`. */
export function childPath(directory: string, name: string): string {
  return directory === '/' ? `/${name}` : `${directory}/${name}`;
}

/** Each directory from the root down to `path`, with its name (`/` is the root, named ''). */
export function pathCrumbs(path: string): { name: string; path: string }[] {
  const parts = path.split('/').filter((part) => part !== '');
  return [
    { name: '', path: '/' },
    ...parts.map((name, i) => ({ name, path: `/${parts.slice(0, i + 1).join('/')}` })),
  ];
}

/** The chosen path that holds `path` (itself, or a directory above it), or undefined. */
export function chosenAbove(chosen: ReadonlySet<string>, path: string): string | undefined {
  if (chosen.has(path)) return path;
  for (let end = path.lastIndexOf('/'); end > 0; end = path.lastIndexOf('/', end - 1)) {
    const above = path.slice(0, end);
    if (chosen.has(above)) return above;
  }
  return undefined;
}

import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import {
  backupFileLink,
  childPath,
  chosenAbove,
  normalizePath,
  pathCrumbs,
  useBackup,
  useBackupFiles,
  type BackupFile,
} from '../api/backup-files.ts';
import type { Backup } from '../api/types.ts';
import { Dialog } from '../components/Dialog.tsx';
import { RequestError } from '../components/Form.tsx';
import { Loading } from '../components/Page.tsx';
import { Pagination } from '../components/Pagination.tsx';
import { Time } from '../components/Time.tsx';
import { formatBytes, plural } from '../format.ts';
import type { Can } from '../permissions.ts';
import { Link, useLocation, withParams, type Location } from '../router.tsx';
import { RestoreFilesDialog, type ChosenPath } from './RestoreFilesDialog.tsx';

/** The most paths one restore may name (the API's limit). */
const MOST_PATHS = 1000;

/**
 * Where the browser is, in the server page's address, so that a folder of a backup can be shared
 * and reached with Back: the backup (`browse`), the folder (`path`) and the page of it.
 */
export function browseHref(location: Location, uuid: string | null): string {
  return withParams(location, { browse: uuid, path: null, files_page: null });
}

/** The backup being browsed, from the address; null when none is. */
export function browsedBackup(location: Location): string | null {
  return location.search.get('browse');
}

function FolderIcon() {
  return (
    <svg className="file-icon" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <path d="M1.5 3.5h4.2l1.5 1.6h7.3v7.4h-13z" fill="currentColor" opacity="0.85" />
    </svg>
  );
}

function FileIcon() {
  return (
    <svg className="file-icon" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <path d="M3.5 1.5h6l3 3v10h-9z" fill="none" stroke="currentColor" strokeWidth="1.2" />
    </svg>
  );
}

interface BackupFilesDialogProps {
  id: string;
  uuid: string;
  /** The backup as the list shown holds it, if it does. */
  known: Backup | undefined;
  can: Can;
  /** Whether the server is busy (restoring, say): then nothing can be restored. */
  busy: boolean;
  onClose: () => void;
}

/**
 * What a backup holds, a folder at a time: each file or folder can be downloaded, and,
 * for a user who may restore, chosen (in any folder: the choice is kept while browsing) and
 * restored without the rest of the server's files.
 */
export function BackupFilesDialog({ id, uuid, known, can, busy, onClose }: BackupFilesDialogProps) {
  const location = useLocation();
  const directory = normalizePath(location.search.get('path') ?? '/');
  const page = Math.max(1, Number(location.search.get('files_page')) || 1);
  const backup = useBackup(id, uuid, known);
  const listing = useBackupFiles(id, uuid, directory, page);
  const canRestore = can('backup.restore');
  // Each chosen path, and whether it is a folder.
  const [chosen, setChosen] = useState<ReadonlyMap<string, boolean>>(new Map());
  const [confirming, setConfirming] = useState(false);
  const download = useMutation({
    mutationFn: (file: string) => backupFileLink(id, uuid, file),
    onSuccess: (url) => window.location.assign(url),
  });
  const hrefOf = (path: string) =>
    withParams(location, { path: path === '/' ? null : path, files_page: null });

  // Opening a folder removes the link that was clicked: the focus goes to where the user now is.
  const crumbs = useRef<HTMLElement>(null);
  const shown = useRef(directory);
  useEffect(() => {
    if (shown.current === directory) return;
    shown.current = directory;
    crumbs.current?.querySelector<HTMLElement>('[aria-current]')?.focus();
  }, [directory]);

  const choose = (path: string, isDirectory: boolean, on: boolean) =>
    setChosen((old) => {
      const next = new Map(old);
      if (on) {
        // A folder brings back all it holds: what was chosen in it is part of it now.
        if (isDirectory) for (const key of old.keys()) if (key.startsWith(`${path}/`)) next.delete(key);
        next.set(path, isDirectory);
      } else next.delete(path);
      return next;
    });
  const chosenList: ChosenPath[] = [...chosen]
    .map(([path, isDirectory]) => ({ path, isDirectory }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const chosenSet = new Set(chosen.keys());
  const restoreReason = busy
    ? 'The server is busy; wait until it is ready.'
    : chosen.size > MOST_PATHS
      ? `At most ${plural(MOST_PATHS, 'path')} can be restored at once.`
      : null;

  const name = backup.data?.attributes.name;
  const list = listing.data;
  // The folder the entries shown are in (the API's own spelling of it).
  const listed = list?.meta.directory ?? directory;

  const row = (entry: BackupFile) => {
    const path = childPath(listed, entry.name);
    const isDirectory = !entry.is_file;
    const above = chosenAbove(chosenSet, path);
    const inherited = above !== undefined && above !== path;
    return (
      <tr key={path} data-path={path}>
        {canRestore ? (
          <td className="file-select">
            <input
              type="checkbox"
              aria-label={`Select ${entry.name}`}
              checked={above !== undefined}
              disabled={inherited}
              title={inherited ? `Restored with ${above}` : undefined}
              onChange={(event) => choose(path, isDirectory, event.target.checked)}
            />
          </td>
        ) : null}
        <td data-label="Name" className="file-name">
          {isDirectory ? (
            <Link to={hrefOf(path)}>
              <FolderIcon />
              {entry.name}
            </Link>
          ) : (
            <span>
              <FileIcon />
              {entry.name}
            </span>
          )}
        </td>
        <td data-label="Size">{isDirectory ? <span className="muted">—</span> : formatBytes(entry.size)}</td>
        <td data-label="Modified">
          <Time iso={entry.modified_at} />
        </td>
        <td>
          <div className="row-actions">
            <button
              type="button"
              aria-label={`Download ${entry.name}`}
              title={isDirectory ? 'A .tar.gz of this folder' : undefined}
              onClick={() => download.mutate(path)}
              disabled={download.isPending}
            >
              Download
            </button>
          </div>
        </td>
      </tr>
    );
  };

  return (
    <>
      <Dialog
        title={name === undefined ? 'Files of the backup' : `Files of ${name}`}
        className="dialog-wide backup-files"
        onClose={onClose}
      >
        <nav className="file-crumbs" aria-label="Folder" ref={crumbs}>
          <ol>
            {pathCrumbs(directory).map((crumb) => (
              <li key={crumb.path}>
                <Link to={hrefOf(crumb.path)} current={crumb.path === directory}>
                  {crumb.path === '/' ? 'All files' : crumb.name}
                </Link>
              </li>
            ))}
          </ol>
        </nav>
        {canRestore ? (
          <div className="file-choice" role="group" aria-label="Selected files">
            <div className="file-choice-bar">
              <span className="muted small" aria-live="polite">
                {chosen.size === 0 ? 'None selected' : `${plural(chosen.size, 'path')} selected`}
              </span>
              <button type="button" onClick={() => setChosen(new Map())} disabled={chosen.size === 0}>
                Clear selection
              </button>
              <button
                type="button"
                className="primary"
                onClick={() => setConfirming(true)}
                disabled={chosen.size === 0 || restoreReason !== null || backup.data === undefined}
                aria-describedby={restoreReason === null ? undefined : 'restore-files-reason'}
              >
                Restore selected
              </button>
            </div>
            {restoreReason === null ? null : (
              <p className="hint" id="restore-files-reason">
                {restoreReason}
              </p>
            )}
            {chosenList.length === 0 ? null : (
              <ul className="file-chosen" aria-label="Selected paths">
                {chosenList.map((item) => (
                  <li key={item.path}>
                    <code>{item.isDirectory ? `${item.path}/` : item.path}</code>
                    <button
                      type="button"
                      className="link-button"
                      aria-label={`Unselect ${item.path}`}
                      onClick={() => choose(item.path, item.isDirectory, false)}
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </div>
        ) : null}
        <RequestError error={download.error} />
        <RequestError error={backup.error ?? listing.error} />
        {listing.isPending ? <Loading what="the folder" /> : null}
        {list === undefined ? null : list.data.length === 0 ? (
          <p className="empty">{listed === '/' ? 'This backup holds no files.' : 'This folder is empty.'}</p>
        ) : (
          <div className="file-table-scroll">
            <table className="table file-table">
              <caption className="visually-hidden">Contents of {listed}</caption>
              <thead>
                <tr>
                  {canRestore ? (
                    <th className="file-select">
                      <span className="visually-hidden">Select</span>
                    </th>
                  ) : null}
                  <th>Name</th>
                  <th>Size</th>
                  <th>Modified</th>
                  <th>
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>{list.data.map(({ attributes }) => row(attributes))}</tbody>
            </table>
          </div>
        )}
        {list === undefined || list.meta.pagination.total_pages <= 1 ? null : (
          <Pagination
            meta={list.meta.pagination}
            hrefFor={(p) => withParams(location, { files_page: p === 1 ? null : p })}
            noun="entry"
            nouns="entries"
          />
        )}
      </Dialog>
      {confirming && backup.data !== undefined ? (
        <RestoreFilesDialog
          id={id}
          backup={backup.data.attributes}
          chosen={chosenList}
          onClose={() => setConfirming(false)}
          onStarted={onClose}
        />
      ) : null}
    </>
  );
}

/**
 * How a server's last restore ended, as its activity feed records it: the server writes the end
 * (`server:backup.restore-complete` or `server:backup.restore-failed`) in the batch of the
 * request that started the restore (`server:backup.restore`), in the transaction that releases
 * the server. The event stream says only that the server is no longer restoring.
 */
import { api, query } from './client.ts';
import { serverPath } from './hooks.ts';
import type { ActivityLog, List } from './types.ts';

const STARTED = 'server:backup.restore';
const ENDS = new Set(['server:backup.restore-complete', 'server:backup.restore-failed']);

/**
 * The end of the server's newest restore, or null when the feed does not hold it (yet): no
 * restore in the feed, or one whose end is not visible. A failed request throws.
 */
export async function newestRestoreEnd(serverId: string): Promise<ActivityLog | null> {
  // A substring filter: the start and both ends, at most two entries a restore.
  const feed = await api<List<ActivityLog>>(
    `${serverPath(serverId)}/activity${query({ 'filter[event]': STARTED, sort: '-timestamp', per_page: 10 })}`,
  );
  const entries = feed.data;
  const start = entries.find((entry) => entry.attributes.event === STARTED);
  if (start === undefined) return null;
  return (
    entries.find(
      (entry) => ENDS.has(entry.attributes.event) && entry.attributes.batch === start.attributes.batch,
    ) ?? null
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `newestRestoreEnd`, asked again a few times while the feed does not hold the end yet (the
 * status may be heard of before the entry can be read); null when it never does, or when a
 * request fails.
 */
export async function restoreEnd(
  serverId: string,
  { tries = 3, delayMs = 700 }: { tries?: number; delayMs?: number } = {},
): Promise<ActivityLog | null> {
  for (let attempt = 1; attempt <= tries; attempt++) {
    try {
      const end = await newestRestoreEnd(serverId);
      if (end !== null) return end;
    } catch {
      return null;
    }
    if (attempt < tries) await sleep(delayMs);
  }
  return null;
}

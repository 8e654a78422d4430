import type { Executor } from '../db/executor.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor } from '../users/actor.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { loadPage, type Page } from '../shared/page.ts';
import type { ActivityEvent } from './activity.events.ts';
import type { ActivityRepository, FeedFilter, FeedRow, Subject } from './activity.repository.ts';
import type { ActivityQuery } from './activity.schema.ts';

export interface ActivityEntry {
  event: ActivityEvent;
  /** The user who caused it; omitted for the system (and for failed logins). */
  actor?: Actor | null;
  properties?: Record<string, unknown>;
  subjects: readonly Subject[];
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

export class ActivityService {
  constructor(
    private readonly activity: ActivityRepository,
    private readonly clock: Clock,
  ) {}

  /** Writes one entry; pass the transaction of the change it records. */
  async record(context: RequestContext, entry: ActivityEntry, db?: Executor): Promise<void> {
    await this.activity.insert(
      {
        batch: context.batch,
        event: entry.event,
        ip: context.ip,
        actorId: entry.actor?.user.id ?? null,
        apiKeyId: entry.actor?.apiKeyId ?? null,
        properties: entry.properties ?? {},
        timestamp: toStoredTime(this.clock()),
        subjects: entry.subjects,
      },
      db,
    );
  }

  /** The feed of every entry about `subject`, as `viewer` may see it (and filter it). */
  async list(viewer: Actor, subject: Subject, query: ActivityQuery): Promise<Page<FeedRow>> {
    const actorFilter = query['filter[actor_id]'];
    const filter: FeedFilter = {
      subject,
      event: nonEmpty(query['filter[event]']),
      ip: nonEmpty(query['filter[ip]']),
      actorId:
        actorFilter === undefined ? undefined : actorFilter === 'system' ? null : actorFilter.toLowerCase(),
      viewer: { userId: viewer.user.id, admin: viewer.user.rootAdmin },
    };
    return loadPage(
      query,
      () => this.activity.count(filter),
      (window) => this.activity.page(filter, { descending: query.sort === '-timestamp', ...window }),
    );
  }
}

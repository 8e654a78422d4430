import type { Executor } from '../db/executor.ts';
import type { Actor, RequestContext } from '../shared/context.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import { offsetOf, paginate, type PageUrl } from '../http/pagination.ts';
import type { ActivityEvent } from './activity.events.ts';
import type { ActivityRepository, FeedFilter, Subject } from './activity.repository.ts';
import type { ActivityList, ActivityQuery } from './activity.schema.ts';
import { toActivityLogResource } from './activity.transform.ts';

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

  /** The feed of every entry about `subject`, as `viewer` may see it. */
  async list(
    viewer: Actor,
    subject: Subject,
    query: ActivityQuery,
    pageUrl?: PageUrl,
  ): Promise<ActivityList> {
    const actorFilter = query['filter[actor_id]'];
    const filter: FeedFilter = {
      subject,
      event: nonEmpty(query['filter[event]']),
      ip: nonEmpty(query['filter[ip]']),
      actorId:
        actorFilter === undefined ? undefined : actorFilter === 'system' ? null : actorFilter.toLowerCase(),
      viewer: { userId: viewer.user.id, admin: viewer.user.rootAdmin },
    };
    const total = await this.activity.count(filter);
    const offset = offsetOf(query.page, query.per_page);
    const rows =
      offset >= total
        ? []
        : await this.activity.page(filter, {
            descending: query.sort === '-timestamp',
            limit: query.per_page,
            offset,
          });
    return {
      object: 'list',
      data: rows.map((row) => toActivityLogResource(row, filter.viewer)),
      meta: { pagination: paginate(total, rows.length, query.per_page, query.page, pageUrl) },
    };
  }
}

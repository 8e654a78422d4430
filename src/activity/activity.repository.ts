import { sql, type SelectQueryBuilder } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Executor } from '../db/executor.ts';
import { insertReturningId } from '../db/insert-id.ts';
import type { ActivityLogRow } from './activity.table.ts';

export type SubjectType = 'user' | 'server' | 'backup' | 'api_key';

export interface Subject {
  type: SubjectType;
  id: string;
}

export interface NewActivity {
  batch: string;
  event: string;
  ip: string | null;
  actorId: string | null;
  apiKeyId: number | null;
  properties: Record<string, unknown>;
  timestamp: string;
  subjects: readonly Subject[];
}

export interface FeedFilter {
  subject: Subject;
  /** Substring of the event, any case; `%` and `_` are plain characters. */
  event?: string | undefined;
  /** Substring of the IP; only entries whose IP the viewer may see can match. */
  ip?: string | undefined;
  /** A user's id, or null for entries the system wrote. */
  actorId?: string | null | undefined;
  viewer: { userId: string; admin: boolean };
}

export interface FeedPage {
  descending: boolean;
  limit: number;
  offset: number;
}

/** An entry of a feed, with the name of its actor. */
export interface FeedRow extends ActivityLogRow {
  actor_username: string | null;
  actor_email: string | null;
  actor_first_name: string | null;
  actor_last_name: string | null;
}

/** Code-unit order, the same on every engine and in every locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

type FeedQuery = SelectQueryBuilder<Database & { s: Database['activity_log_subjects'] }, 's', object>;

/**
 * Whether `column` contains `value`, in any case: a plain substring search, so `%`, `_` and every
 * other character stand for themselves. (SQLite scans a feed's index about 2.5 times faster with
 * `instr` than with an escaped `LIKE '%…%'`.)
 */
function contains(kind: DatabaseKind, column: 's.event' | 's.ip', value: string) {
  const position = kind === 'postgres' ? sql`strpos` : sql`instr`;
  return sql<boolean>`${position}(lower(${sql.ref(column)}), ${value.toLowerCase()}) > 0`;
}

export class ActivityRepository {
  constructor(
    private readonly db: Executor,
    private readonly kind: DatabaseKind,
  ) {}

  /**
   * Writes an entry, its subjects rows and its feeds' counts together: in the caller's
   * transaction, or in one of its own.
   */
  async insert(entry: NewActivity, db: Executor = this.db): Promise<number> {
    if (!db.isTransaction) return db.transaction().execute((trx) => this.insert(entry, trx));
    const id = await insertReturningId(
      this.kind,
      db.insertInto('activity_logs').values({
        batch: entry.batch,
        event: entry.event,
        ip: entry.ip,
        actor_id: entry.actorId,
        api_key_id: entry.apiKeyId,
        properties: JSON.stringify(entry.properties),
        timestamp: entry.timestamp,
      }),
    );
    const subjects = new Map(entry.subjects.map((s) => [`${s.type}:${s.id}`, s]));
    // An entry about nobody (a failed login for an unknown name) is kept, in no feed.
    if (subjects.size === 0) return id;
    await db
      .insertInto('activity_log_subjects')
      .values(
        [...subjects.values()].map((s) => ({
          activity_log_id: id,
          subject_type: s.type,
          subject_id: s.id,
          timestamp: entry.timestamp,
          event: entry.event,
          ip: entry.ip,
          actor_id: entry.actorId,
        })),
      )
      .execute();
    await this.addToCounts(db, [...subjects.values()], 1);
    return id;
  }

  /**
   * Adds `delta` entries to each subject's feed count. The rows are written in one order
   * (type, then id), so two transactions touching the same feeds wait for each other rather
   * than deadlock.
   */
  private async addToCounts(db: Executor, subjects: readonly Subject[], delta: number): Promise<void> {
    const rows = [...subjects]
      .sort((a, b) => (a.type === b.type ? compare(a.id, b.id) : compare(a.type, b.type)))
      .map((s) => ({ subject_type: s.type, subject_id: s.id, entries: delta }));
    const insert = db.insertInto('activity_feed_counts').values(rows);
    await (
      this.kind === 'mysql'
        ? insert.onDuplicateKeyUpdate({ entries: sql`entries + values(entries)` })
        : insert.onConflict((oc) =>
            oc
              .columns(['subject_type', 'subject_id'])
              .doUpdateSet({ entries: sql`activity_feed_counts.entries + excluded.entries` }),
          )
    ).execute();
  }

  /**
   * Deletes up to `limit` of the oldest entries written before `before`, with their subjects
   * rows, and takes them off their feeds' counts, in one transaction. Returns how many entries
   * it deleted: fewer than `limit` once none is left.
   */
  async deleteOlderThan(before: string, limit: number): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const ids = (
        await trx
          .selectFrom('activity_logs')
          .select('id')
          .where('timestamp', '<', before)
          .orderBy('timestamp')
          .orderBy('id')
          .limit(limit)
          .execute()
      ).map((row) => Number(row.id));
      if (ids.length === 0) return 0;
      const feeds = await trx
        .selectFrom('activity_log_subjects')
        .select(['subject_type', 'subject_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('activity_log_id', 'in', ids)
        .groupBy(['subject_type', 'subject_id'])
        .orderBy('subject_type')
        .orderBy('subject_id')
        .execute();
      await trx.deleteFrom('activity_log_subjects').where('activity_log_id', 'in', ids).execute();
      await trx.deleteFrom('activity_logs').where('id', 'in', ids).execute();
      // The counts last, as `insert` takes them last: on MariaDB the deletes above can wait for an
      // insert of new entries (next-key locks past the deleted range), and that insert must never
      // be left waiting for a count row held here, or one of the two dies in a deadlock.
      for (const feed of feeds) {
        await trx
          .updateTable('activity_feed_counts')
          .set({ entries: sql`entries - ${Number(feed.n)}` })
          .where('subject_type', '=', feed.subject_type)
          .where('subject_id', '=', feed.subject_id)
          .execute();
      }
      return ids.length;
    });
  }

  /**
   * The subjects rows of a feed, filtered. Every column it reads is in the feed index
   * (`activity_log_subjects_feed_filter_index`), so counting, filtering and skipping rows read
   * the caller's index range alone, whatever the size of the log.
   */
  private feed(filter: FeedFilter): FeedQuery {
    const { viewer } = filter;
    return this.db
      .selectFrom('activity_log_subjects as s')
      .where('s.subject_type', '=', filter.subject.type)
      .where('s.subject_id', '=', filter.subject.id)
      .$if(filter.event !== undefined, (q) => q.where(contains(this.kind, 's.event', filter.event ?? '')))
      .$if(filter.ip !== undefined, (q) =>
        q
          .where(contains(this.kind, 's.ip', filter.ip ?? ''))
          .$if(!viewer.admin, (q2) => q2.where('s.actor_id', '=', viewer.userId)),
      )
      .$if(filter.actorId === null, (q) => q.where('s.actor_id', 'is', null))
      .$if(typeof filter.actorId === 'string', (q) => q.where('s.actor_id', '=', filter.actorId ?? ''));
  }

  /**
   * How many entries the filtered feed holds: the feed's kept count when nothing narrows it,
   * else a count of the caller's index range.
   */
  async count(filter: FeedFilter): Promise<number> {
    if (filter.event === undefined && filter.ip === undefined && filter.actorId === undefined) {
      const kept = await this.db
        .selectFrom('activity_feed_counts')
        .select('entries')
        .where('subject_type', '=', filter.subject.type)
        .where('subject_id', '=', filter.subject.id)
        .executeTakeFirst();
      return Number(kept?.entries ?? 0);
    }
    const row = await this.feed(filter)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * One page of a feed, ordered by time and then by insertion order, both in one direction: the
   * page's ids are read from the index first (a deferred join), then only those entries.
   */
  async page(filter: FeedFilter, page: FeedPage): Promise<FeedRow[]> {
    const direction = page.descending ? 'desc' : 'asc';
    const ids = this.feed(filter)
      .select(['s.activity_log_id', 's.timestamp'])
      .orderBy('s.timestamp', direction)
      .orderBy('s.activity_log_id', direction)
      .limit(page.limit)
      .offset(page.offset)
      .as('p');
    const rows = await this.db
      .selectFrom(ids)
      .innerJoin('activity_logs as l', 'l.id', 'p.activity_log_id')
      .leftJoin('users as u', 'u.id', 'l.actor_id')
      .select([
        'l.id',
        'l.batch',
        'l.event',
        'l.ip',
        'l.actor_id',
        'l.api_key_id',
        'l.properties',
        'l.timestamp',
        'u.username as actor_username',
        'u.email as actor_email',
        'u.first_name as actor_first_name',
        'u.last_name as actor_last_name',
      ])
      .orderBy('p.timestamp', direction)
      .orderBy('p.activity_log_id', direction)
      .execute();
    return rows.map((row) => ({
      ...row,
      id: Number(row.id),
      api_key_id: row.api_key_id === null ? null : Number(row.api_key_id),
    }));
  }
}

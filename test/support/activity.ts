/**
 * The activity log as tests see it: entries written with chosen timestamps (as the services
 * write them), and the feed read back through the client API.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { ActivityRepository, type Subject } from '../../src/activity/activity.repository.ts';
import type { User } from '../../src/users/user.ts';
import { bearer, type TestApp } from './harness.ts';

export interface SeedEntry {
  event?: string;
  ip?: string | null;
  actorId?: string | null;
  subjects: Subject[];
  timestamp: string;
  properties?: Record<string, unknown>;
  batch?: string;
}

/**
 * Writes activity entries through the repository (as the services do, kept feed counts and all),
 * with chosen timestamps, in the given order and one transaction; returns their ids.
 */
export async function insertActivity(app: TestApp, entries: SeedEntry[]): Promise<number[]> {
  const repository = new ActivityRepository(app.db.kysely, app.db.kind);
  return app.db.kysely.transaction().execute(async (trx) => {
    const ids: number[] = [];
    for (const entry of entries) {
      ids.push(
        await repository.insert(
          {
            batch: entry.batch ?? randomUUID(),
            event: entry.event ?? 'auth:login',
            ip: entry.ip === undefined ? '127.0.0.1' : entry.ip,
            actorId: entry.actorId ?? null,
            apiKeyId: null,
            properties: entry.properties ?? {},
            timestamp: entry.timestamp,
            subjects: entry.subjects,
          },
          trx,
        ),
      );
    }
    return ids;
  });
}

/** An entry at second `second` of 2026-01-01 about `subjects`, tagged `n` (read back by `seqOf`). */
export function at(
  second: number,
  n: string,
  subjects: Subject[],
  fields: Partial<SeedEntry> = {},
): SeedEntry {
  const timestamp = new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();
  return { timestamp, subjects, ...fields, properties: { n, ...fields.properties } };
}

/** Five entries by and about `user`, written out of time order: B, C and D share one timestamp. */
export function tieEntries(user: User): SeedEntry[] {
  const about = [userSubject(user)];
  const by = { actorId: user.id };
  return [
    at(3, 'E', about, by),
    at(2, 'B', about, by),
    at(2, 'C', about, by),
    at(1, 'A', about, by),
    at(2, 'D', about, by),
  ];
}
export const ASCENDING = ['A', 'B', 'C', 'D', 'E'];
export const DESCENDING = ['E', 'D', 'C', 'B', 'A'];

/** `count` entries about `user`, acted by `user`, one second apart from `start`, oldest first. */
export function entriesFor(user: User, count: number, start = '2026-01-01T00:00:00.000Z'): SeedEntry[] {
  const base = new Date(start).getTime();
  return Array.from({ length: count }, (_, i) => ({
    event: 'auth:login',
    actorId: user.id,
    subjects: [userSubject(user)],
    timestamp: new Date(base + i * 1000).toISOString(),
    properties: { n: i },
  }));
}

export function userSubject(user: User): Subject {
  return { type: 'user', id: user.id };
}

/** Empties the activity log, so that a test sees only the entries it writes. */
export async function clearActivity(app: TestApp): Promise<void> {
  await app.db.kysely.deleteFrom('activity_log_subjects').execute();
  await app.db.kysely.deleteFrom('activity_feed_counts').execute();
  await app.db.kysely.deleteFrom('activity_logs').execute();
}

export interface FeedItem {
  object: 'activity_log';
  attributes: {
    batch: string;
    event: string;
    is_api: boolean;
    ip: string | null;
    description: string;
    properties: Record<string, unknown>;
    has_additional_metadata: boolean;
    timestamp: string;
  };
  relationships: { actor: { object: string; attributes: Record<string, unknown> | null } };
}

export interface FeedBody {
  object: 'list';
  data: FeedItem[];
  meta: {
    pagination: { total: number; count: number; per_page: number; current_page: number; total_pages: number };
  };
}

/** GET the caller's activity feed with a bearer token and an optional raw query string. */
export function getFeed(app: TestApp, token: string, query = '', path = '/api/client/activity') {
  return app.http.inject({
    method: 'GET',
    url: query === '' ? path : `${path}?${query}`,
    headers: bearer(token),
  });
}

/** The feed's body, asserting a 200. */
export async function feed(app: TestApp, token: string, query = ''): Promise<FeedBody> {
  const res = await getFeed(app, token, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<FeedBody>();
}

/** The `properties.n` of each entry of a page: which seeded entries came back, in order. */
export function seqOf(body: FeedBody): unknown[] {
  return body.data.map((item) => item.attributes.properties.n);
}

/** The first entry of an event in a feed page, asserting there is one. */
export function find(items: FeedItem[], event: string): FeedItem {
  const item = items.find((i) => i.attributes.event === event);
  expect(item, `${event} in ${items.map((i) => i.attributes.event).join(',')}`).toBeDefined();
  return item as FeedItem;
}

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { ActivityRepository, type Subject } from '../../src/activity/activity.repository.ts';
import type { User } from '../../src/users/user.ts';
import { bearer, type TestApp } from './harness.ts';

export interface ErrorObject {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field: string; rule: string; message: string };
}

/** Asserts the whole body is the error envelope with exactly one error object. */
export function expectError(res: LightMyRequestResponse, status: number, code: string, detail: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ errors: [{ code, status: String(status), detail }] });
}

/**
 * Asserts a 422 whose errors are exactly one ValidationException per listed field, with the
 * given rule (order of the errors is not part of the contract).
 */
export function expectValidation(res: LightMyRequestResponse, fields: Record<string, string>): void {
  expect(res.statusCode, res.body).toBe(422);
  const errors = res.json<{ errors: ErrorObject[] }>().errors;
  const anyString: unknown = expect.any(String);
  for (const error of errors) {
    expect(error).toEqual({
      code: 'ValidationException',
      status: '422',
      detail: 'The given data was invalid.',
      meta: { source_field: anyString, rule: anyString, message: anyString },
    });
  }
  const got = Object.fromEntries(errors.map((e) => [e.meta?.source_field ?? '', e.meta?.rule ?? '']));
  expect(got).toEqual(fields);
  expect(errors).toHaveLength(Object.keys(fields).length);
}

/** A clock tests move by hand. */
export class ManualClock {
  private current: Date;
  constructor(start: string) {
    this.current = new Date(start);
  }
  readonly clock = (): Date => new Date(this.current);
  set(iso: string): void {
    this.current = new Date(iso);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

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

export interface KeyResource {
  object: 'api_key';
  attributes: {
    identifier: string;
    description: string;
    allowed_ips: string[];
    last_used_at: string | null;
    created_at: string;
  };
}

export interface KeyList {
  object: 'list';
  data: KeyResource[];
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

/** The `name=value` part of the session cookie a response sets. */
export function sessionCookieOf(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  const value = Array.isArray(header) ? header[0] : header;
  return String(value).split(';')[0] ?? '';
}

/** A request over a real socket that `fetch` refuses to make (a GET with a body, say). */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

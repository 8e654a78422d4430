/**
 * Baseline for the feed benchmark: a minimal `node:http` server on the bare driver
 * (better-sqlite3, pg or mysql2) answering the default feed of one user with the ideal queries:
 * the total counted on the subjects index alone (`index`, the default) or read from the feed's
 * kept count (`kept`), then a deferred join (the page's 25 ids from the index, then those rows).
 * No auth, no validation, no framework: what the stack can do.
 *
 *   DATABASE_URL=... node --import tsx bench/feed-ideal-server.ts PORT USER_ID [index|kept]
 */
import http from 'node:http';
import SQLite from 'better-sqlite3';
import { createPool } from 'mysql2/promise';
import pg from 'pg';

const [port, userId, counting = 'index'] = process.argv.slice(2);
const url = process.env.DATABASE_URL ?? '';
if (port === undefined || userId === undefined) throw new Error('usage: feed-ideal-server.ts PORT USER_ID');

const COUNT =
  counting === 'kept'
    ? `select entries as n from activity_feed_counts where subject_type = 'user' and subject_id = $1`
    : `select count(*) as n from activity_log_subjects where subject_type = 'user' and subject_id = $1`;
const PAGE = `select l.id, l.batch, l.event, l.ip, l.actor_id, l.api_key_id, l.properties, l.timestamp
  from (select activity_log_id, timestamp from activity_log_subjects
        where subject_type = 'user' and subject_id = $1
        order by timestamp desc, activity_log_id desc limit 25 offset 0) p
  join activity_logs l on l.id = p.activity_log_id
  order by p.timestamp desc, p.activity_log_id desc`;

type Feed = () => Promise<{ total: number; rows: unknown[] }>;
let feed: Feed;
if (url.startsWith('sqlite:')) {
  const db = new SQLite(url.slice('sqlite:'.length), { readonly: true });
  const count = db.prepare(COUNT.replace('$1', '?'));
  const page = db.prepare(PAGE.replace('$1', '?'));
  feed = () => Promise.resolve({ total: (count.get(userId) as { n: number }).n, rows: page.all(userId) });
} else if (url.startsWith('mysql:')) {
  const pool = createPool({ uri: url, connectionLimit: 10 });
  feed = async () => {
    const [count] = await pool.query(COUNT.replace('$1', '?'), [userId]);
    const [rows] = await pool.query(PAGE.replace('$1', '?'), [userId]);
    return { total: Number((count as { n: number }[])[0]?.n), rows: rows as unknown[] };
  };
} else {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  feed = async () => {
    const [count, page] = [
      await pool.query<{ n: string }>(COUNT, [userId]),
      await pool.query(PAGE, [userId]),
    ];
    return { total: Number(count.rows[0]?.n), rows: page.rows };
  };
}

http
  .createServer((_req, res) => {
    feed().then(
      ({ total, rows }) => {
        const body = JSON.stringify({ object: 'list', data: rows, meta: { pagination: { total } } });
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end(body);
      },
      (error: unknown) => {
        res.writeHead(500);
        res.end(String(error));
      },
    );
  })
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));

/**
 * Baseline for the feed benchmark: bare `node:http` answering every request with the same bytes
 * (a feed response captured from Aerie), so the figure is what Node's HTTP layer alone costs.
 *
 *   node --import tsx bench/feed-bare-server.ts PORT BODY_FILE
 */
import fs from 'node:fs';
import http from 'node:http';

const [port, file] = process.argv.slice(2);
if (port === undefined || file === undefined) throw new Error('usage: feed-bare-server.ts PORT BODY_FILE');
const body = fs.readFileSync(file);
http
  .createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  })
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));

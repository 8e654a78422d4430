#!/usr/bin/env node
// Backs up a server and restores it, using only the client API, as a script of yours would:
// list your servers, make a backup, wait for it, restore it (files deleted first), wait for the
// restore, then print the server's and your own activity.
//
//   AERIE_URL=http://127.0.0.1:8080 AERIE_TOKEN=ptlc_... node examples/backup-and-restore.mjs [server]
//
// Works against any Pterodactyl-compatible panel that has these endpoints. Node 20+, no packages.

const base = (process.env.AERIE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const token = process.env.AERIE_TOKEN;
if (!token) throw new Error('set AERIE_TOKEN to an API key');

async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      'content-type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return null;
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json.errors?.[0]?.detail ?? ''}`);
  return json;
}

async function waitFor(what, check, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const servers = await api('GET', '/api/client');
const server = process.argv[2]
  ? servers.data.find((s) => [s.attributes.identifier, s.attributes.uuid].includes(process.argv[2]))
  : servers.data[0];
if (!server) throw new Error('no such server');
const id = server.attributes.identifier;
console.log(`server ${server.attributes.name} (${id}), ${servers.meta.pagination.total} server(s) in all`);

const started = await api('POST', `/api/client/servers/${id}/backups`, { name: 'scripted backup' });
const uuid = started.attributes.uuid;
console.log(`backup ${uuid} started`);
const backup = await waitFor('the backup', async () => {
  const b = await api('GET', `/api/client/servers/${id}/backups/${uuid}`);
  if (b.attributes.completed_at && !b.attributes.is_successful) throw new Error('the backup failed');
  return b.attributes.is_successful ? b : null;
});
console.log(`backup done: ${backup.attributes.bytes} bytes, ${backup.attributes.checksum}`);

await api('POST', `/api/client/servers/${id}/backups/${uuid}/restore`, { truncate: true });
console.log('restore started');
await waitFor(
  'the restore',
  async () => (await api('GET', `/api/client/servers/${id}`)).attributes.status === null,
);

const serverFeed = await api('GET', `/api/client/servers/${id}/activity?per_page=5`);
const outcome = serverFeed.data.find((e) => e.attributes.event.startsWith('server:backup.restore-'));
console.log(`restore finished: ${outcome?.attributes.event} — ${outcome?.attributes.description}`);
for (const entry of serverFeed.data)
  console.log(`  server  ${entry.attributes.timestamp} ${entry.attributes.event}`);
const mine = await api('GET', '/api/client/account/activity?per_page=5');
for (const entry of mine.data)
  console.log(`  account ${entry.attributes.timestamp} ${entry.attributes.event}`);
if (outcome?.attributes.event !== 'server:backup.restore-complete') process.exitCode = 1;

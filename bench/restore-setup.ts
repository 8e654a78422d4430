/**
 * Benchmark set-up (not measured): a data directory with one user, one server and the given
 * archive imported as its backup, and a restore of it queued. Prints the server's volume path.
 *
 *   node --import tsx bench/restore-setup.ts <data dir> <archive.tar.gz> <truncate: true|false>
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createServices } from '../src/services.ts';
import { MemoryCounterStore } from '../src/shared/counter-store.ts';
import { systemClock } from '../src/shared/time.ts';

const [dataDir, archive, truncate] = process.argv.slice(2);
if (dataDir === undefined || archive === undefined)
  throw new Error('usage: restore-setup.ts DATA_DIR ARCHIVE [true|false]');
const config = loadConfig({
  AERIE_DATA_DIR: dataDir,
  DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
});
const db = connect(config.database);
await migrateToLatest(db);
const services = createServices({ config, db, clock: systemClock, counters: new MemoryCounterStore() });
const { user } = await services.users.create({ username: 'bench', email: 'bench@example.com', admin: true });
const { server, volume } = await services.servers.create({ owner: 'bench', name: 'bench' });
const backup = await services.backupManagement.importArchive(server.id, 'bench', archive);
const actor = { user, apiKeyId: null, sessionId: null };
const access = await services.access.resolve(actor, server.id);
const stored = await services.backupManagement.find(server.id, backup.uuid);
if (stored === undefined) throw new Error('the imported backup is missing');
await services.backupRestore.requestRestore(
  { batch: randomUUID(), ip: '127.0.0.1', userAgent: 'bench', actor },
  access,
  stored,
  { truncate: truncate !== 'false' },
);
await db.destroy();
process.stdout.write(`${volume}\n`);

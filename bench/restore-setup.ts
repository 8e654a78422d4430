/**
 * Benchmark set-up (not measured): a data directory with one user, one server and the given
 * archive imported as its backup. Prints the server's id, its volume path and the backup's uuid,
 * separated by spaces, for bench/restore-run.ts.
 *
 *   node --import tsx bench/restore-setup.ts <data dir> <archive.tar.gz>
 */
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { connect } from '../src/db/connection.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createServices } from '../src/services.ts';
import { MemoryCounterStore } from '../src/shared/counter-store.ts';
import { systemClock } from '../src/shared/time.ts';

const [dataDir, archive] = process.argv.slice(2);
if (dataDir === undefined || archive === undefined)
  throw new Error('usage: restore-setup.ts DATA_DIR ARCHIVE');
const config = loadConfig({
  AERIE_DATA_DIR: dataDir,
  DATABASE_URL: `sqlite:${path.join(dataDir, 'aerie.db')}`,
});
const db = connect(config.database);
await migrateToLatest(db);
const services = createServices({ config, db, clock: systemClock, counters: new MemoryCounterStore() });
await services.users.create({ username: 'bench', email: 'bench@example.com', admin: true });
const { server, volume } = await services.servers.create({ owner: 'bench', name: 'bench' });
const backup = await services.backupManagement.importArchive(server.id, 'bench', archive);
await db.destroy();
process.stdout.write(`${server.id} ${volume} ${backup.uuid}\n`);

import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Db } from './db/connection.ts';
import type { Transactor } from './db/executor.ts';
import type { CounterStore } from './shared/counter-store.ts';
import type { Clock } from './shared/time.ts';

/**
 * What every feature module is built from (see services.ts): the configuration, the database and
 * its transactions, the clock, the log and the throttle counters.
 */
export interface ModuleContext {
  readonly config: Config;
  readonly db: Db;
  readonly transaction: Transactor;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly counters: CounterStore;
}

import type { Command } from 'commander';
import { positiveInteger, printRecord } from '../output.ts';
import { recordAction } from '../with-runtime.ts';

interface ServerUpdateOptions {
  server: string;
  name?: string;
  description?: string;
  diskMb?: number;
  backupLimit?: number;
  json: boolean;
}

/** `aerie server update`: changes the settings `server create` fixed; those not given stay. */
export function serverUpdateCommand(server: Command): void {
  const update = server
    .command('update')
    .requiredOption('--server <id>', 'server UUID or short identifier')
    .option('--name <name>')
    .option('--description <text>')
    .option('--disk-mb <mib>', 'disk limit in MiB (0 = none)', positiveInteger)
    .option(
      '--backup-limit <n>',
      'how many backups the server may hold (0 = backups disabled); lowering it deletes nothing',
      positiveInteger,
    );
  recordAction(update, async (o: ServerUpdateOptions, { services }) => {
    const updated = await services.servers.update(o.server, o);
    printRecord(
      o.json,
      {
        uuid: updated.id,
        identifier: updated.identifier,
        name: updated.name,
        description: updated.description,
        disk_mb: updated.disk_mb,
        backup_limit: updated.backup_limit,
      },
      [
        `updated server ${updated.name} (${updated.identifier}, ${updated.id})`,
        `disk limit: ${updated.disk_mb === 0 ? 'none' : `${updated.disk_mb} MiB`}`,
        `backup limit: ${updated.backup_limit}`,
      ],
    );
  });
}

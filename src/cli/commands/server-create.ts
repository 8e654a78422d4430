import type { Command } from 'commander';
import { DEFAULT_NODE } from '../../servers/node-name.ts';
import { DEFAULT_BACKUP_LIMIT } from '../../servers/server.service.ts';
import { positiveInteger, printRecord } from '../output.ts';
import { recordAction } from '../with-runtime.ts';

interface ServerCreateOptions {
  owner: string;
  name: string;
  description?: string;
  diskMb: number;
  backupLimit: number;
  node: string;
  json: boolean;
}

/** `aerie server create`: the server's record and its empty volume. */
export function serverCreateCommand(server: Command): void {
  const create = server
    .command('create')
    .requiredOption('--owner <login>', 'username or email of the owner')
    .requiredOption('--name <name>')
    .option('--description <text>')
    .option('--disk-mb <mib>', 'disk limit in MiB (0 = none)', positiveInteger, 0)
    .option(
      '--backup-limit <n>',
      'how many backups the server may hold (0 = backups disabled)',
      positiveInteger,
      DEFAULT_BACKUP_LIMIT,
    )
    .option(
      '--node <name>',
      "the node whose worker holds the server's volume and runs its jobs",
      DEFAULT_NODE,
    );
  recordAction(create, async (o: ServerCreateOptions, { services }) => {
    const { server: created, volume } = await services.servers.create(o);
    printRecord(o.json, { uuid: created.id, identifier: created.identifier, volume }, [
      `created server ${created.name} (${created.identifier}, ${created.id}) on node ${created.node}`,
      `backup limit: ${created.backup_limit}`,
      `volume: ${volume}`,
    ]);
  });
}

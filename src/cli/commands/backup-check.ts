import type { Command } from 'commander';
import { printRecord } from '../output.ts';
import { THREAD_WORK, withRuntime } from '../with-runtime.ts';

/**
 * `aerie backup check`: verifies snapshot repositories (the index, every pack it names, every
 * snapshot's trees; with `--read-data`, every chunk's hash), and names each damaged backup by
 * its UUID. Exits non-zero when any is damaged. docs/snapshots.md says what to do then.
 */
export function backupCheckCommand(backup: Command): void {
  backup
    .command('check')
    .description('verify snapshot backups, naming each damaged one; --read-data reads every chunk')
    .option('--server <id>', 'only this server (UUID or short identifier)')
    .option(
      '--read-data',
      "read every stored chunk and check its hash (reads all of the servers' backups)",
      false,
    )
    .option('--json', 'print only the report, as JSON', false)
    .action((o: { server?: string; readData: boolean; json: boolean }) =>
      withRuntime(async ({ services }) => {
        const done = await services.backupManagement.checkRepositories(o.server, o.readData);
        const used = done.filter(
          ({ report }) => report.snapshots > 0 || report.packs > 0 || report.problems.length > 0,
        );
        const damaged = used.flatMap(({ report }) => report.damagedBackups);
        const problems = used.flatMap(({ identifier, report }) =>
          report.problems.map((problem) => ({ server: identifier, ...problem })),
        );
        printRecord(
          o.json,
          {
            read_data: o.readData,
            repositories: used.map(({ serverId, disk, report }) => ({ server: serverId, disk, ...report })),
            damaged_backups: damaged,
          },
          [
            ...used.map(
              ({ identifier, disk, report }) =>
                `${identifier} (${disk}): ${report.snapshots} snapshots, ${report.packs} packs, ${report.blobs} chunks` +
                (o.readData ? `, ${report.bytesRead} bytes read` : '') +
                (report.problems.length === 0 ? ': no problem' : `: ${report.problems.length} problems`),
            ),
            ...problems.map(
              (p) => `  ${p.server}: ${p.backup === null ? '' : `backup ${p.backup}: `}${p.message}`,
            ),
            damaged.length === 0
              ? 'every backup checked is intact'
              : `damaged backups (${damaged.length}): ${damaged.join(', ')}; see docs/snapshots.md, "When a check fails"`,
          ],
        );
        if (damaged.length > 0 || problems.length > 0) process.exitCode = 1;
      }, THREAD_WORK),
    );
}

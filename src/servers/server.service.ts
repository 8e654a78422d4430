import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BadRequestError, NotFoundError } from '../shared/errors.ts';
import { assertText } from '../shared/text.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { UserRepository } from '../users/user.repository.ts';
import { DEFAULT_NODE, nodeName } from './node-name.ts';
import type { ServerRepository } from './server.repository.ts';
import type { ServerRow } from './server.table.ts';

export interface NewServer {
  owner: string;
  name: string;
  description?: string | undefined;
  diskMb?: number | undefined;
  /** How many backups the server may hold (made by hand, or by schedules); 10 when not given. */
  backupLimit?: number | undefined;
  /** The node whose worker holds the volume and runs the server's jobs; `local` when not given. */
  node?: string | undefined;
}

/** What `server update` may change; what is not given stays as it is. */
export interface ServerSettings {
  name?: string | undefined;
  description?: string | undefined;
  diskMb?: number | undefined;
  backupLimit?: number | undefined;
}

/** The backup limit of a server made without one, as before it could be chosen. */
export const DEFAULT_BACKUP_LIMIT = 10;

/** The largest limit a column of every engine holds (a signed 32-bit integer). */
const MAX_LIMIT = 2_147_483_647;

function checkedName(name: string): string {
  assertText('name', name, 'single-line');
  const trimmed = name.trim();
  if (trimmed === '' || trimmed.length > 191)
    throw new BadRequestError('A server name is 1 to 191 characters.');
  return trimmed;
}

/** A description, as in the reference panel, may run over several lines. */
function checkedDescription(description: string): string {
  assertText('description', description, 'multi-line');
  return description;
}

function checkedDiskMb(diskMb: number): number {
  if (!Number.isInteger(diskMb) || diskMb < 0 || diskMb > MAX_LIMIT)
    throw new BadRequestError('The disk limit is a whole number of MiB (0 = none).');
  return diskMb;
}

function checkedBackupLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT)
    throw new BadRequestError('The backup limit is a whole number of backups (0 = no backups).');
  return limit;
}

export interface ServerServiceDeps {
  servers: ServerRepository;
  users: UserRepository;
  clock: Clock;
  /** Where volumes live: `<volumesDir>/<server uuid>/`. */
  volumesDir: string;
}

export class ServerService {
  constructor(private readonly deps: ServerServiceDeps) {}

  volumeOf(server: Pick<ServerRow, 'id'>): string {
    return path.join(this.deps.volumesDir, server.id);
  }

  /** Creates the server's record and its empty volume directory. */
  async create(input: NewServer): Promise<{ server: ServerRow; volume: string }> {
    const name = checkedName(input.name);
    const description = checkedDescription(input.description ?? '');
    const diskMb = checkedDiskMb(input.diskMb ?? 0);
    const backupLimit = checkedBackupLimit(input.backupLimit ?? DEFAULT_BACKUP_LIMIT);
    const owner = await this.deps.users.findByLogin(input.owner);
    if (owner === undefined) throw new NotFoundError(`No user "${input.owner}".`);
    const node = nodeName(input.node ?? DEFAULT_NODE);

    let id = randomUUID();
    while ((await this.deps.servers.findByReference(id.slice(0, 8))) !== undefined) id = randomUUID();
    const now = toStoredTime(this.deps.clock());
    const server: ServerRow = {
      id,
      identifier: id.slice(0, 8),
      owner_id: owner.id,
      name,
      description,
      status: null,
      disk_mb: diskMb,
      backup_limit: backupLimit,
      node,
      created_at: now,
      updated_at: now,
    };
    const volume = this.volumeOf(server);
    await fs.mkdir(volume, { recursive: true, mode: 0o750 });
    try {
      await this.deps.servers.insert(server);
    } catch (error) {
      await fs.rm(volume, { recursive: true, force: true });
      throw error;
    }
    return { server, volume };
  }

  /**
   * Changes a server's settings (`aerie server update`): its name, description, disk limit and
   * backup limit. A lower backup limit deletes nothing: backups made by hand are refused until
   * the server is under it, and each schedule's backup deletes one old backup per run.
   */
  async update(reference: string, settings: ServerSettings): Promise<ServerRow> {
    const changes = {
      ...(settings.name !== undefined ? { name: checkedName(settings.name) } : {}),
      ...(settings.description !== undefined
        ? { description: checkedDescription(settings.description) }
        : {}),
      ...(settings.diskMb !== undefined ? { disk_mb: checkedDiskMb(settings.diskMb) } : {}),
      ...(settings.backupLimit !== undefined
        ? { backup_limit: checkedBackupLimit(settings.backupLimit) }
        : {}),
    };
    if (Object.keys(changes).length === 0)
      throw new BadRequestError(
        'Nothing to change: give a name, a description, a disk limit or a backup limit.',
      );
    const server = await this.deps.servers.findByReference(reference);
    if (server === undefined) throw new NotFoundError(`No server "${reference}".`);
    const now = toStoredTime(this.deps.clock());
    await this.deps.servers.updateSettings(server.id, changes, now);
    return { ...server, ...changes, updated_at: now };
  }
}

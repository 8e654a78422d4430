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
  /** The node whose worker holds the volume and runs the server's jobs; `local` when not given. */
  node?: string | undefined;
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
    // A name is one line; a description, as in the reference panel, may run over several.
    assertText('name', input.name, 'single-line');
    assertText('description', input.description, 'multi-line');
    const owner = await this.deps.users.findByLogin(input.owner);
    if (owner === undefined) throw new NotFoundError(`No user "${input.owner}".`);
    const name = input.name.trim();
    if (name === '' || name.length > 191) throw new BadRequestError('A server name is 1 to 191 characters.');
    const diskMb = input.diskMb ?? 0;
    if (!Number.isInteger(diskMb) || diskMb < 0)
      throw new BadRequestError('The disk limit is a whole number of MiB (0 = none).');
    const node = nodeName(input.node ?? DEFAULT_NODE);

    let id = randomUUID();
    while ((await this.deps.servers.findByReference(id.slice(0, 8))) !== undefined) id = randomUUID();
    const now = toStoredTime(this.deps.clock());
    const server: ServerRow = {
      id,
      identifier: id.slice(0, 8),
      owner_id: owner.id,
      name,
      description: input.description ?? '',
      status: null,
      disk_mb: diskMb,
      backup_limit: 10,
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
}

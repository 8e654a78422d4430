import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

interface ServerItem {
  attributes: {
    uuid: string;
    identifier: string;
    status: string | null;
    server_owner: boolean;
    limits: { disk: number };
  };
  meta: { user_permissions: string[]; is_server_owner: boolean };
}

describe('servers and the account', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => app.close());

  async function setup() {
    const owner = await createUser(app);
    const sub = await createUser(app);
    const stranger = await createUser(app);
    const admin = await createUser(app, { admin: true });
    const mine = await createServer(app, owner, { diskMb: 512, name: 'survival' });
    const shared = await createServer(app, stranger, { name: 'creative' });
    await addSubuser(app, shared.id, owner, ['backup.read']);
    await addSubuser(app, mine.id, sub, ['activity.read']);
    const tokens = {
      owner: (await createApiKey(app, owner)).token,
      sub: (await createApiKey(app, sub)).token,
      stranger: (await createApiKey(app, stranger)).token,
      admin: (await createApiKey(app, admin)).token,
    };
    return { owner, sub, stranger, admin, mine, shared, tokens };
  }

  const get = (url: string, token: string) => app.http.inject({ method: 'GET', url, headers: bearer(token) });

  it('lists the servers a user owns or is a subuser of, with their permissions', async () => {
    const { mine, shared, tokens } = await setup();
    const res = await get('/api/client', tokens.owner);
    expect(res.statusCode).toBe(200);
    const body = res.json<{
      data: ServerItem[];
      meta: { pagination: { per_page: number; total: number } };
    }>();
    expect(body.meta.pagination).toMatchObject({ per_page: 50, total: 2 });
    const byId = new Map(body.data.map((item) => [item.attributes.uuid, item]));
    expect(byId.get(mine.id)).toMatchObject({
      attributes: { identifier: mine.identifier, server_owner: true, status: null, limits: { disk: 512 } },
      meta: { user_permissions: ['*'], is_server_owner: true },
    });
    expect(byId.get(shared.id)).toMatchObject({
      attributes: { server_owner: false },
      meta: { user_permissions: ['backup.read'], is_server_owner: false },
    });
    const owned = await get('/api/client?type=owner', tokens.owner);
    expect(owned.json<{ data: ServerItem[] }>().data.map((s) => s.attributes.uuid)).toEqual([mine.id]);
  });

  it('gives administrators every server only when they ask with type=admin', async () => {
    const { mine, shared, tokens } = await setup();
    const own = await get('/api/client', tokens.admin);
    expect(own.json<{ data: ServerItem[] }>().data).toHaveLength(0);
    const all = await get('/api/client/?type=admin&per_page=100', tokens.admin);
    const ids = all.json<{ data: ServerItem[] }>().data.map((s) => s.attributes.uuid);
    expect(ids).toEqual(expect.arrayContaining([mine.id, shared.id]));
    const notAdmin = await get('/api/client?type=admin', tokens.stranger);
    expect(notAdmin.json<{ data: ServerItem[] }>().data.map((s) => s.attributes.uuid)).toEqual([shared.id]);
  });

  it('pages the list and validates its query', async () => {
    const { owner, tokens } = await setup();
    for (let i = 0; i < 3; i++) await createServer(app, owner);
    const page = await get('/api/client?per_page=2&page=2', tokens.owner);
    expect(page.json<{ meta: { pagination: object } }>().meta.pagination).toMatchObject({
      total: 5,
      count: 2,
      per_page: 2,
      current_page: 2,
      total_pages: 3,
    });
    for (const bad of ['per_page=0', 'per_page=101', 'page=0', 'type=everything']) {
      expect((await get(`/api/client?${bad}`, tokens.owner)).statusCode).toBe(422);
    }
  });

  it('shows one server by uuid or identifier, with its status, and hides it from strangers', async () => {
    const { mine, tokens } = await setup();
    for (const ref of [mine.id, mine.identifier, mine.id.toUpperCase()]) {
      const res = await get(`/api/client/servers/${ref}`, tokens.owner);
      expect(res.statusCode).toBe(200);
      expect(res.json<ServerItem>().attributes.uuid).toBe(mine.id);
    }
    await app.db.kysely
      .updateTable('servers')
      .set({ status: 'restoring_backup' })
      .where('id', '=', mine.id)
      .execute();
    expect(
      (await get(`/api/client/servers/${mine.identifier}`, tokens.owner)).json<ServerItem>().attributes
        .status,
    ).toBe('restoring_backup');
    for (const ref of [mine.id, mine.identifier, randomUUID(), 'nonsense']) {
      const res = await get(`/api/client/servers/${ref}`, tokens.stranger);
      expect(res.statusCode).toBe(404);
      expect(res.json<{ errors: { code: string }[] }>().errors[0]?.code).toBe('NotFoundHttpException');
    }
    expect((await get(`/api/client/servers/${mine.id}`, tokens.admin)).statusCode).toBe(200);
  });

  it('describes the account, with an integer id as the reference panel gives it, and the UUID', async () => {
    const { owner, tokens } = await setup();
    const res = await get('/api/client/account', tokens.owner);
    expect(res.json()).toEqual({
      object: 'user',
      attributes: {
        id: owner.number,
        uuid: owner.id,
        admin: false,
        username: owner.username,
        email: owner.email,
        first_name: owner.firstName,
        last_name: owner.lastName,
        language: 'en',
        use_totp: false,
      },
    });
  });

  it('numbers users in the order they were made, each number its own and stable', async () => {
    const first = await createUser(app);
    const second = await createUser(app);
    expect(Number.isInteger(first.number)).toBe(true);
    expect(second.number).toBeGreaterThan(first.number);
    const { token } = await createApiKey(app, second);
    const account = (await get('/api/client/account', token)).json<{ attributes: { id: unknown } }>();
    expect(account.attributes.id).toBe(second.number);
    expect((await get('/api/client/account', token)).json()).toEqual(account);
  });

  it("serves the server's feed to those with activity.read, and only entries about that server", async () => {
    const { mine, shared, tokens } = await setup();
    const feed = await get(`/api/client/servers/${mine.identifier}/activity`, tokens.owner);
    expect(feed.statusCode).toBe(200);
    const events = feed
      .json<{ data: { attributes: { event: string } }[] }>()
      .data.map((e) => e.attributes.event);
    // Adding the subuser is about the server; the owner's key creation is not.
    expect(events).toEqual(['server:subuser.create']);
    expect((await get(`/api/client/servers/${mine.id}/activity`, tokens.sub)).statusCode).toBe(200);
    // The owner is a subuser of `shared` without activity.read.
    expect((await get(`/api/client/servers/${shared.id}/activity`, tokens.owner)).statusCode).toBe(403);
    expect((await get(`/api/client/servers/${mine.id}/activity`, tokens.stranger)).statusCode).toBe(404);
    expect((await get(`/api/client/servers/${mine.id}/activity?per_page=0`, tokens.owner)).statusCode).toBe(
      422,
    );
  });
});

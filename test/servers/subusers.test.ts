import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { InjectOptions } from 'fastify';
import {
  addSubuser,
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';
import type { SubuserRepository } from '../../src/servers/subuser.repository.ts';
import type { User } from '../../src/users/user.ts';

interface SubuserBody {
  object: string;
  attributes: {
    uuid: string;
    username: string;
    email: string;
    image: string;
    '2fa_enabled': boolean;
    created_at: string;
    permissions: string[];
  };
}
interface ListBody {
  object: string;
  data: SubuserBody[];
}
interface ErrorBody {
  errors: { code: string; status: string; detail: string; meta?: { source_field: string; rule: string } }[];
}
interface FeedEntry {
  attributes: { event: string; properties: Record<string, unknown>; description: string };
  relationships: { actor: { object: string; attributes: { uuid: string } | null } };
}

const WIRE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
const USER_PERMISSIONS = ['user.read', 'user.create', 'user.update', 'user.delete'] as const;
const UNAUTHORIZED = 'This action is unauthorized.';
const ALREADY = 'A user with that email address is already assigned as a subuser for this server.';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

const tokenOf = async (user: User) => (await createApiKey(app, user)).token;

function call(method: InjectOptions['method'], url: string, token: string, payload?: unknown) {
  return app.http.inject({
    method,
    url,
    headers: bearer(token),
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** A server with its owner, one plain subuser (`member`), an outsider to add, a stranger and an admin. */
async function setup() {
  const owner = await createUser(app);
  const member = await createUser(app);
  const outsider = await createUser(app);
  const stranger = await createUser(app);
  const admin = await createUser(app, { admin: true });
  const server = await createServer(app, owner);
  await addSubuser(app, server.id, member, ['backup.read', 'backup.restore']);
  const base = `/api/client/servers/${server.identifier}/users`;
  return {
    owner,
    member,
    outsider,
    stranger,
    admin,
    server,
    base,
    tokens: {
      owner: await tokenOf(owner),
      member: await tokenOf(member),
      outsider: await tokenOf(outsider),
      stranger: await tokenOf(stranger),
      admin: await tokenOf(admin),
    },
  };
}

/** Makes a new user a subuser of the setup's server with `permissions`, and returns them with a key. */
async function subuserWith(serverId: string, permissions: string[]) {
  const user = await createUser(app);
  await addSubuser(app, serverId, user, permissions);
  return { user, token: await tokenOf(user) };
}

function gravatar(email: string): string {
  return `https://gravatar.com/avatar/${createHash('md5').update(email.toLowerCase()).digest('hex')}`;
}

function expectError(
  res: { statusCode: number; json: <T>() => T },
  status: number,
  code: string,
  detail?: string,
) {
  expect(res.statusCode).toBe(status);
  const error = res.json<ErrorBody>().errors[0];
  expect(error).toMatchObject({ code, status: String(status) });
  if (detail !== undefined) expect(error?.detail).toBe(detail);
}

function expectValidation(res: { statusCode: number; json: <T>() => T }, field: string, rule?: string) {
  expect(res.statusCode).toBe(422);
  const errors = res.json<ErrorBody>().errors;
  expect(errors.every((e) => e.code === 'ValidationException')).toBe(true);
  const error = errors.find((e) => e.meta?.source_field === field);
  expect(error, `an error on ${field} in ${JSON.stringify(errors)}`).toBeDefined();
  if (rule !== undefined) expect(error?.meta?.rule).toBe(rule);
}

async function subuserIds(base: string, token: string): Promise<string[]> {
  const res = await call('GET', base, token);
  expect(res.statusCode).toBe(200);
  return res.json<ListBody>().data.map((s) => s.attributes.uuid);
}

async function feedOf(url: string, token: string): Promise<FeedEntry[]> {
  const res = await call('GET', `${url}?sort=timestamp&filter[event]=server:subuser`, token);
  expect(res.statusCode).toBe(200);
  return res.json<{ data: FeedEntry[] }>().data;
}

describe('listing and reading subusers', () => {
  it('lists the server subusers in the reference panel shape', async () => {
    const { member, base, tokens } = await setup();
    const res = await call('GET', base, tokens.owner);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'list',
      data: [
        {
          object: 'server_subuser',
          attributes: {
            uuid: member.id,
            username: member.username,
            email: member.email,
            image: gravatar(member.email),
            '2fa_enabled': false,
            created_at: expect.stringMatching(WIRE_TIME) as unknown,
            permissions: ['backup.read', 'backup.restore'],
          },
        },
      ],
    });
    expect(res.json<ListBody>().data[0]?.attributes.created_at).toBe(
      `${member.createdAt.slice(0, 19)}+00:00`,
    );
  });

  it('lists only this server subusers, in the order they were added', async () => {
    const { owner, server, base, tokens } = await setup();
    const second = await subuserWith(server.id, []);
    const other = await createServer(app, owner);
    await subuserWith(other.id, ['backup.read']);
    const ids = await subuserIds(base, tokens.owner);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(second.user.id);
    expect(await subuserIds(`/api/client/servers/${other.id}/users`, tokens.owner)).toHaveLength(1);
  });

  it('shows one subuser by user UUID (any case), and 404 for anyone who is not a subuser here', async () => {
    const { owner, member, outsider, base, tokens } = await setup();
    for (const ref of [member.id, member.id.toUpperCase()]) {
      const res = await call('GET', `${base}/${ref}`, tokens.owner);
      expect(res.statusCode).toBe(200);
      expect(res.json<SubuserBody>()).toMatchObject({
        object: 'server_subuser',
        attributes: { uuid: member.id, email: member.email, permissions: ['backup.read', 'backup.restore'] },
      });
    }
    for (const ref of [owner.id, outsider.id, randomUUID(), 'nonsense', 'x'.repeat(100)]) {
      const res = await call('GET', `${base}/${ref}`, tokens.owner);
      expectError(res, 404, 'NotFoundHttpException');
    }
  });

  it('lets a subuser read their own entry', async () => {
    const { server, base } = await setup();
    const { user, token } = await subuserWith(server.id, ['user.read']);
    const res = await call('GET', `${base}/${user.id}`, token);
    expect(res.statusCode).toBe(200);
    expect(res.json<SubuserBody>().attributes.permissions).toEqual(['user.read']);
  });
});

describe('adding a subuser', () => {
  it('adds an existing user by email and answers with the subuser', async () => {
    const { outsider, base, tokens } = await setup();
    const res = await call('POST', base, tokens.owner, {
      email: outsider.email.toUpperCase(),
      permissions: ['backup.read', 'activity.read', 'backup.read'],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'server_subuser',
      attributes: {
        uuid: outsider.id,
        username: outsider.username,
        email: outsider.email,
        image: gravatar(outsider.email),
        '2fa_enabled': false,
        created_at: expect.stringMatching(WIRE_TIME) as unknown,
        permissions: ['activity.read', 'backup.read'],
      },
    });
    expect(await subuserIds(base, tokens.owner)).toContain(outsider.id);
    const fetched = await call('GET', `${base}/${outsider.id}`, tokens.owner);
    expect(fetched.json<SubuserBody>().attributes.permissions).toEqual(['activity.read', 'backup.read']);
    // The new subuser now sees the server, with those permissions.
    const server = await call('GET', base.replace(/\/users$/, ''), tokens.outsider);
    expect(server.statusCode).toBe(200);
    expect(server.json<{ meta: { user_permissions: string[] } }>().meta.user_permissions).toEqual([
      'activity.read',
      'backup.read',
    ]);
  });

  it('accepts an empty permission list', async () => {
    const { outsider, base, tokens } = await setup();
    const res = await call('POST', base, tokens.owner, { email: outsider.email, permissions: [] });
    expect(res.statusCode).toBe(200);
    expect(res.json<SubuserBody>().attributes.permissions).toEqual([]);
  });

  it('refuses an email that belongs to nobody with a 422 on email (no invitations)', async () => {
    const { outsider, base, tokens } = await setup();
    for (const email of ['nobody-here@example.com', `x${outsider.email}`]) {
      const res = await call('POST', base, tokens.owner, { email, permissions: [] });
      expectValidation(res, 'email', 'exists');
    }
    // Only an email address counts, even where a username looks like one.
    const lookalike = `lookalike-${randomUUID().slice(0, 8)}@example.com`;
    await app.db.kysely
      .updateTable('users')
      .set({ username: lookalike })
      .where('id', '=', outsider.id)
      .execute();
    expectValidation(
      await call('POST', base, tokens.owner, { email: lookalike, permissions: [] }),
      'email',
      'exists',
    );
    // A username is not an email address.
    expectValidation(
      await call('POST', base, tokens.owner, { email: outsider.username, permissions: [] }),
      'email',
      'email',
    );
  });

  it('refuses the owner and an existing subuser with a DisplayException', async () => {
    const { owner, member, base, tokens } = await setup();
    const asOwner = await call('POST', base, tokens.owner, { email: owner.email, permissions: [] });
    expectError(
      asOwner,
      400,
      'DisplayException',
      'You cannot add the server owner as a subuser for this server.',
    );
    const again = await call('POST', base, tokens.owner, {
      email: member.email,
      permissions: ['backup.read'],
    });
    expectError(again, 400, 'DisplayException', ALREADY);
    // Nothing changed for the existing subuser.
    const fetched = await call('GET', `${base}/${member.id}`, tokens.owner);
    expect(fetched.json<SubuserBody>().attributes.permissions).toEqual(['backup.read', 'backup.restore']);
  });

  it('lets exactly one of two simultaneous additions of the same user through', async () => {
    const { outsider, base, tokens } = await setup();
    // Hold the first "is it already there?" look-up until the second request has made its own, so
    // both pass that check and the database's unique index has to decide.
    const repository = (app.services.subusers as unknown as { deps: { subusers: SubuserRepository } }).deps
      .subusers;
    const find = repository.find.bind(repository);
    let release: (() => void) | undefined;
    let armed = true;
    const spy = vi.spyOn(repository, 'find').mockImplementation(async (...args) => {
      if (armed) {
        if (release === undefined) {
          await new Promise<void>((resolve) => {
            release = resolve;
            setTimeout(resolve, 2000);
          });
        } else {
          armed = false;
          release();
        }
      }
      return find(...args);
    });
    const body = { email: outsider.email, permissions: ['backup.read'] };
    try {
      const results = await Promise.all([
        call('POST', base, tokens.owner, body),
        call('POST', base, tokens.owner, body),
      ]);
      expect(armed, 'both requests reached the check together').toBe(false);
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400]);
      const loser = results.find((r) => r.statusCode === 400);
      expect(loser?.json<ErrorBody>().errors[0]).toMatchObject({ code: 'DisplayException', detail: ALREADY });
    } finally {
      spy.mockRestore();
    }
    expect((await subuserIds(base, tokens.owner)).filter((id) => id === outsider.id)).toHaveLength(1);
  });

  it('validates the body: unknown permissions, non-arrays, missing and malformed fields', async () => {
    const { outsider, base, tokens } = await setup();
    const email = outsider.email;
    expectValidation(
      await call('POST', base, tokens.owner, { email, permissions: ['backup.read', 'backup.everything'] }),
      'permissions.1',
      'in',
    );
    expectValidation(
      await call('POST', base, tokens.owner, { email, permissions: [42] }),
      'permissions.0',
      'in',
    );
    expectValidation(
      await call('POST', base, tokens.owner, { email, permissions: 'backup.read' }),
      'permissions',
      'array',
    );
    expectValidation(await call('POST', base, tokens.owner, { email }), 'permissions', 'required');
    expectValidation(await call('POST', base, tokens.owner, { permissions: [] }), 'email', 'required');
    expectValidation(
      await call('POST', base, tokens.owner, { email: 'not-an-email', permissions: [] }),
      'email',
    );
    expectValidation(
      await call('POST', base, tokens.owner, { email: 5, permissions: [] }),
      'email',
      'string',
    );
    expectValidation(await call('POST', base, tokens.owner), 'email', 'required');
    // None of these added anybody.
    expect(await subuserIds(base, tokens.owner)).not.toContain(outsider.id);
  });
});

describe('changing and removing a subuser', () => {
  it("replaces a subuser's permissions and answers with the new entry", async () => {
    const { member, base, tokens } = await setup();
    const res = await call('POST', `${base}/${member.id}`, tokens.owner, {
      permissions: ['user.read', 'activity.read', 'user.read'],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json<SubuserBody>()).toMatchObject({
      object: 'server_subuser',
      attributes: { uuid: member.id, email: member.email, permissions: ['activity.read', 'user.read'] },
    });
    const fetched = await call('GET', `${base}/${member.id}`, tokens.owner);
    expect(fetched.json<SubuserBody>().attributes.permissions).toEqual(['activity.read', 'user.read']);
    // The change takes effect at once: backup.restore is gone.
    const server = await call('GET', base.replace(/\/users$/, ''), tokens.member);
    expect(server.json<{ meta: { user_permissions: string[] } }>().meta.user_permissions).toEqual([
      'activity.read',
      'user.read',
    ]);
  });

  it('validates the update body', async () => {
    const { member, base, tokens } = await setup();
    const url = `${base}/${member.id}`;
    expectValidation(await call('POST', url, tokens.owner, { permissions: ['nope'] }), 'permissions.0', 'in');
    expectValidation(
      await call('POST', url, tokens.owner, { permissions: { a: 1 } }),
      'permissions',
      'array',
    );
    expectValidation(await call('POST', url, tokens.owner, {}), 'permissions', 'required');
    const fetched = await call('GET', url, tokens.owner);
    expect(fetched.json<SubuserBody>().attributes.permissions).toEqual(['backup.read', 'backup.restore']);
  });

  it('removes a subuser, who then loses the server', async () => {
    const { member, base, server, tokens } = await setup();
    expect((await call('GET', `/api/client/servers/${server.id}`, tokens.member)).statusCode).toBe(200);
    const res = await call('DELETE', `${base}/${member.id}`, tokens.owner);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await subuserIds(base, tokens.owner)).toEqual([]);
    expectError(await call('GET', `${base}/${member.id}`, tokens.owner), 404, 'NotFoundHttpException');
    expectError(
      await call('GET', `/api/client/servers/${server.id}`, tokens.member),
      404,
      'NotFoundHttpException',
    );
    const list = await call('GET', '/api/client', tokens.member);
    expect(list.json<{ data: unknown[] }>().data).toEqual([]);
    // Removing again finds nothing.
    expectError(await call('DELETE', `${base}/${member.id}`, tokens.owner), 404, 'NotFoundHttpException');
  });

  it('answers 404 to changes of someone who is not a subuser here', async () => {
    const { owner, outsider, base, tokens } = await setup();
    for (const ref of [owner.id, outsider.id, randomUUID(), 'nonsense', 'x'.repeat(100)]) {
      expectError(
        await call('POST', `${base}/${ref}`, tokens.owner, { permissions: [] }),
        404,
        'NotFoundHttpException',
      );
      expectError(await call('DELETE', `${base}/${ref}`, tokens.owner), 404, 'NotFoundHttpException');
    }
  });

  it('forbids a subuser to change or remove their own entry', async () => {
    const { server, base, tokens } = await setup();
    const { user, token } = await subuserWith(server.id, [...USER_PERMISSIONS]);
    const update = await call('POST', `${base}/${user.id}`, token, { permissions: ['user.read'] });
    expectError(
      update,
      403,
      'AccessDeniedHttpException',
      'Editing your own subuser account is not permitted.',
    );
    const remove = await call('DELETE', `${base}/${user.id}`, token);
    expectError(
      remove,
      403,
      'AccessDeniedHttpException',
      'Editing your own subuser account is not permitted.',
    );
    const fetched = await call('GET', `${base}/${user.id}`, tokens.owner);
    expect(fetched.json<SubuserBody>().attributes.permissions).toEqual([...USER_PERMISSIONS].sort());
  });
});

describe('who may do what', () => {
  type Setup = Awaited<ReturnType<typeof setup>>;
  interface Operation {
    name: string;
    permission: (typeof USER_PERMISSIONS)[number];
    ok: number;
    run: (s: Setup, token: string) => ReturnType<typeof call>;
  }
  const operations: Operation[] = [
    { name: 'list', permission: 'user.read', ok: 200, run: (s, t) => call('GET', s.base, t) },
    {
      name: 'read',
      permission: 'user.read',
      ok: 200,
      run: (s, t) => call('GET', `${s.base}/${s.member.id}`, t),
    },
    {
      name: 'add',
      permission: 'user.create',
      ok: 200,
      run: (s, t) => call('POST', s.base, t, { email: s.outsider.email, permissions: [] }),
    },
    {
      name: 'change',
      permission: 'user.update',
      ok: 200,
      run: (s, t) => call('POST', `${s.base}/${s.member.id}`, t, { permissions: [] }),
    },
    {
      name: 'remove',
      permission: 'user.delete',
      ok: 204,
      run: (s, t) => call('DELETE', `${s.base}/${s.member.id}`, t),
    },
  ];

  for (const op of operations) {
    it(`${op.name}: owner and admin may; a subuser needs ${op.permission}; strangers see nothing`, async () => {
      for (const who of ['owner', 'admin'] as const) {
        const s = await setup();
        expect((await op.run(s, s.tokens[who])).statusCode, who).toBe(op.ok);
      }

      const s = await setup();
      const others = USER_PERMISSIONS.filter((p) => p !== op.permission);
      const without = await subuserWith(s.server.id, [...others, 'backup.read', 'activity.read']);
      expectError(await op.run(s, without.token), 403, 'AccessDeniedHttpException', UNAUTHORIZED);
      // The member and the outsider are untouched.
      expect(await subuserIds(s.base, s.tokens.owner)).not.toContain(s.outsider.id);
      const member = await call('GET', `${s.base}/${s.member.id}`, s.tokens.owner);
      expect(member.json<SubuserBody>().attributes.permissions).toEqual(['backup.read', 'backup.restore']);

      expectError(await op.run(s, s.tokens.stranger), 404, 'NotFoundHttpException');
      const withIt = await subuserWith(s.server.id, [op.permission]);
      expect((await op.run(s, withIt.token)).statusCode).toBe(op.ok);
    });
  }

  it('answers 404 for an unknown server, and checks visibility and permission before the body', async () => {
    const { server, base, tokens } = await setup();
    expectError(
      await call('GET', `/api/client/servers/${randomUUID()}/users`, tokens.owner),
      404,
      'NotFoundHttpException',
    );
    expectError(
      await call('GET', `/api/client/servers/${'x'.repeat(100)}/users`, tokens.owner),
      404,
      'NotFoundHttpException',
    );
    expectError(
      await call('POST', base, tokens.stranger, { permissions: 'bad' }),
      404,
      'NotFoundHttpException',
    );
    const reader = await subuserWith(server.id, ['user.read']);
    expectError(
      await call('POST', base, reader.token, { permissions: 'bad' }),
      403,
      'AccessDeniedHttpException',
    );
    expectError(
      await call('POST', `${base}/${reader.user.id}`, tokens.stranger, { permissions: 'bad' }),
      404,
      'NotFoundHttpException',
    );
  });

  it('lets a subuser grant only permissions they hold', async () => {
    const { outsider, base, server, tokens } = await setup();
    const manager = await subuserWith(server.id, [
      'user.create',
      'user.update',
      'backup.read',
      'activity.read',
    ]);
    const denied = await call('POST', base, manager.token, {
      email: outsider.email,
      permissions: ['backup.read', 'backup.restore'],
    });
    expectError(
      denied,
      403,
      'AccessDeniedHttpException',
      'Cannot assign permissions to a subuser that your account does not actively possess.',
    );
    expect(await subuserIds(base, tokens.owner)).not.toContain(outsider.id);

    const granted = await call('POST', base, manager.token, {
      email: outsider.email,
      permissions: ['backup.read', 'user.create'],
    });
    expect(granted.statusCode).toBe(200);

    // The member holds backup.restore, which the manager lacks: keeping it is no grant, adding it is.
    const target = await subuserWith(server.id, ['backup.restore']);
    const keep = await call('POST', `${base}/${target.user.id}`, manager.token, {
      permissions: ['backup.restore', 'activity.read'],
    });
    expect(keep.statusCode).toBe(200);
    expect(keep.json<SubuserBody>().attributes.permissions).toEqual(['activity.read', 'backup.restore']);
    const grant = await call(
      'POST',
      `${base}/${granted.json<SubuserBody>().attributes.uuid}`,
      manager.token,
      {
        permissions: ['backup.read', 'backup.delete'],
      },
    );
    expectError(grant, 403, 'AccessDeniedHttpException');

    // Owners and administrators grant anything.
    const all = ['activity.read', 'backup.delete', 'backup.restore', 'user.delete'];
    const byOwner = await call('POST', `${base}/${target.user.id}`, tokens.owner, { permissions: all });
    expect(byOwner.json<SubuserBody>().attributes.permissions).toEqual(all);
    const byAdmin = await call('POST', `${base}/${target.user.id}`, tokens.admin, {
      permissions: ['backup.download'],
    });
    expect(byAdmin.json<SubuserBody>().attributes.permissions).toEqual(['backup.download']);
  });
});

describe('activity', () => {
  it('records create, update and delete in the server feed and in the subuser own feed', async () => {
    const { owner, outsider, server, base, tokens } = await setup();
    expect(
      (await call('POST', base, tokens.owner, { email: outsider.email, permissions: ['backup.read'] }))
        .statusCode,
    ).toBe(200);
    const update = await call('POST', `${base}/${outsider.id}`, tokens.owner, {
      permissions: ['activity.read', 'backup.read'],
    });
    expect(update.statusCode).toBe(200);
    expect((await call('DELETE', `${base}/${outsider.id}`, tokens.owner)).statusCode).toBe(204);

    const expected = [
      {
        event: 'server:subuser.create',
        properties: { email: outsider.email, permissions: ['backup.read'] },
        description: `Added ${outsider.email} as a subuser`,
      },
      {
        event: 'server:subuser.update',
        properties: {
          email: outsider.email,
          permissions: ['activity.read', 'backup.read'],
          old_permissions: ['backup.read'],
        },
        description: `Changed the permissions of subuser ${outsider.email}`,
      },
      {
        event: 'server:subuser.delete',
        properties: { email: outsider.email },
        description: `Removed ${outsider.email} as a subuser`,
      },
    ];
    const serverFeed = (await feedOf(`/api/client/servers/${server.id}/activity`, tokens.owner)).filter(
      (e) => e.attributes.properties.email === outsider.email,
    );
    const ownFeed = await feedOf('/api/client/activity', tokens.outsider);
    for (const entries of [serverFeed, ownFeed]) {
      expect(entries.map((e) => e.attributes)).toEqual(
        expected.map((e) => expect.objectContaining(e) as unknown),
      );
      for (const entry of entries) {
        expect(entry.relationships.actor).toMatchObject({ object: 'user', attributes: { uuid: owner.id } });
      }
    }
  });

  it('records nothing when an update changes nothing, and nothing for refused requests', async () => {
    const { member, outsider, server, base, tokens } = await setup();
    const same = await call('POST', `${base}/${member.id}`, tokens.owner, {
      permissions: ['backup.restore', 'backup.read'],
    });
    expect(same.statusCode).toBe(200);
    await call('POST', base, tokens.owner, { email: member.email, permissions: [] });
    await call('POST', base, tokens.owner, { email: outsider.email, permissions: ['nope'] });
    const events = (await feedOf(`/api/client/servers/${server.id}/activity`, tokens.owner)).map(
      (e) => e.attributes.event,
    );
    // Only the harness's addition of the member.
    expect(events).toEqual(['server:subuser.create']);
  });

  it('records the CLI path (server add-subuser) as the system, adding then changing', async () => {
    const { outsider, server, tokens } = await setup();
    await addSubuser(app, server.id, outsider, ['backup.read']);
    await addSubuser(app, server.id, outsider, ['backup.read', 'backup.download']);
    const entries = await feedOf('/api/client/activity', tokens.outsider);
    expect(entries.map((e) => e.attributes.event)).toEqual([
      'server:subuser.create',
      'server:subuser.update',
    ]);
    expect(entries[1]?.attributes.properties).toMatchObject({
      permissions: ['backup.download', 'backup.read'],
      old_permissions: ['backup.read'],
    });
    for (const entry of entries) {
      expect(entry.relationships.actor).toEqual({ object: 'null_resource', attributes: null });
    }
  });

  it('lets a subuser with user.* but without activity.read act, and the entry names them as actor', async () => {
    const { outsider, server, base, tokens } = await setup();
    const manager = await subuserWith(server.id, ['user.create']);
    expect(
      (await call('POST', base, manager.token, { email: outsider.email, permissions: [] })).statusCode,
    ).toBe(200);
    const [entry] = await feedOf('/api/client/activity', tokens.outsider);
    expect(entry?.attributes.event).toBe('server:subuser.create');
    expect(entry?.relationships.actor.attributes).toMatchObject({ uuid: manager.user.id });
  });
});

/**
 * One rule for the text Aerie stores or looks up, the same on SQLite, PostgreSQL and MariaDB
 * (this file runs on the engine of AERIE_TEST_DATABASE_URL): a NUL is refused everywhere, a
 * single-line field (a name, a description, a username, an email) refuses every control
 * character, and multi-line text (`ignored`, a server's description) takes tabs and line breaks
 * but nothing else. Refusals are 422s naming the field, before any query; other text, accents,
 * CJK and emoji included, is stored and read back exactly.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_DATABASE } from '../support/databases.ts';
import { spawnAerie } from '../support/aerie-process.ts';
import { expectError, expectValidation } from '../support/expect-error.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

/** What a single-line field refuses, each inside otherwise ordinary text. */
const SINGLE_LINE_REFUSED: Record<string, string> = {
  NUL: 'a\u0000b',
  'line feed': 'a\nb',
  'carriage return': 'a\rb',
  tab: 'a\tb',
  escape: 'a\u001b[31mb',
  DEL: 'a\u007fb',
  'C1 next line': 'a\u0085b',
  'C1 CSI': 'a\u009bb',
  'line separator': 'a\u2028b',
  'paragraph separator': 'a\u2029b',
  'right-to-left override': 'invoice\u202egpj.exe',
  'left-to-right embedding': 'a\u202ab',
  'first strong isolate': 'a\u2068b',
};
const REFUSED_CASES = Object.entries(SINGLE_LINE_REFUSED);

/** Text that is not ASCII but is ordinary, which every engine must keep as it was sent. */
const ORDINARY = 'Sauvegarde é ß Ωμέγα 漢字 🦖💥 עברית';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app.close());

function post(url: string, token: string | null, payload: unknown) {
  return app.http.inject({
    method: 'POST',
    url,
    headers: token === null ? {} : bearer(token),
    payload: payload as Record<string, unknown>,
  });
}

async function activityCount(event: string): Promise<number> {
  const row = await app.db.kysely
    .selectFrom('activity_logs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('event', '=', event)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe(`the text rule on ${TEST_DATABASE.kind}`, () => {
  describe('login', () => {
    it('refuses a NUL in the user or the password with a 422, before any look-up', async () => {
      const login = vi.spyOn(app.services.sessions, 'login');
      const failures = await activityCount('auth:fail');
      try {
        const user = await post('/auth/login', null, { user: 'a\u0000', password: 'x' });
        expectValidation(user, { user: 'no_control_characters' });
        const password = await post('/auth/login', null, { user: 'admin', password: 'a\u0000b' });
        expectValidation(password, { password: 'no_control_characters' });
        const both = await post('/auth/login', null, { user: '\u0000', password: '\u0000' });
        expectValidation(both, { user: 'no_control_characters', password: 'no_control_characters' });
        expect(login).not.toHaveBeenCalled();
      } finally {
        login.mockRestore();
      }
      expect(await activityCount('auth:fail')).toBe(failures);
    });

    it.each(REFUSED_CASES)('refuses a %s in the user', async (_name, text) => {
      const res = await post('/auth/login', null, { user: text, password: 'x' });
      expectValidation(res, { user: 'no_control_characters' });
    });

    it('takes any other character in a password: only a NUL is refused there', async () => {
      const password = `pass\tword ${ORDINARY} \u001b\u202e`;
      const user = await createUser(app, { password });
      const ok = await post('/auth/login', null, { user: user.username, password });
      expect(ok.statusCode, ok.body).toBe(200);
      const wrong = await post('/auth/login', null, { user: user.username, password: `${password}\n` });
      expectError(wrong, 400, 'DisplayException', 'No account matching those credentials could be found.');
    });
  });

  describe('backups', () => {
    async function backupsOf(serverId: string): Promise<Array<{ name: string }>> {
      return app.db.kysely.selectFrom('backups').select('name').where('server_id', '=', serverId).execute();
    }

    it.each(REFUSED_CASES)('refuses a %s in a backup name, and stores nothing', async (_name, text) => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const res = await post(`/api/client/servers/${server.identifier}/backups`, token, { name: text });
      expectValidation(res, { name: 'no_control_characters' });
      expect(res.json<{ errors: Array<{ meta: { message: string } }> }>().errors[0]?.meta.message).toBe(
        'The name field must not contain control characters.',
      );
      expect(await backupsOf(server.id)).toEqual([]);
    });

    it('stores a name in any script exactly', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const res = await post(`/api/client/servers/${server.identifier}/backups`, token, { name: ORDINARY });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<{ attributes: { name: string } }>().attributes.name).toBe(ORDINARY);
      expect(await backupsOf(server.id)).toEqual([{ name: ORDINARY }]);
    });

    it('takes line breaks and tabs in `ignored`, and refuses every other control character', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const url = `/api/client/servers/${server.identifier}/backups`;
      const ok = await post(url, token, { ignored: 'logs/\r\n*.tmp\n\tcache\rnotes\té.txt\n漢字/' });
      expect(ok.statusCode, ok.body).toBe(200);
      expect(ok.json<{ attributes: { ignored_files: string[] } }>().attributes.ignored_files).toEqual([
        'logs/',
        '*.tmp',
        'cache',
        'notes\té.txt',
        '漢字/',
      ]);
      for (const [name, text] of REFUSED_CASES) {
        if (['line feed', 'carriage return', 'tab'].includes(name)) continue;
        expectValidation(await post(url, token, { ignored: `logs\n${text}` }), { ignored: 'ignored' });
        // A comment is dropped, but what it holds is text all the same.
        expectValidation(await post(url, token, { ignored: `# ${text}` }), { ignored: 'ignored' });
      }
      expect(await backupsOf(server.id)).toHaveLength(1);
    });
  });

  describe('API keys', () => {
    it.each(REFUSED_CASES)('refuses a %s in a description, and makes no key', async (_name, text) => {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      const res = await post('/api/client/account/api-keys', token, { description: text });
      expectValidation(res, { description: 'no_control_characters' });
      const keys = await app.db.kysely
        .selectFrom('api_keys')
        .select('description')
        .where('user_id', '=', user.id)
        .execute();
      expect(keys).toEqual([{ description: 'test key' }]);
    });

    it('stores a description in any script exactly', async () => {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      const res = await post('/api/client/account/api-keys', token, { description: ORDINARY });
      expect(res.statusCode, res.body).toBe(200);
      const { identifier } = res.json<{ attributes: { identifier: string } }>().attributes;
      const row = await app.db.kysely
        .selectFrom('api_keys')
        .select('description')
        .where('identifier', '=', identifier)
        .executeTakeFirstOrThrow();
      expect(row.description).toBe(ORDINARY);
      const list = await app.http.inject({
        method: 'GET',
        url: '/api/client/account/api-keys',
        headers: bearer(token),
      });
      const descriptions = list
        .json<{ data: Array<{ attributes: { description: string } }> }>()
        .data.map((key) => key.attributes.description);
      expect(descriptions).toContain(ORDINARY);
    });
  });

  describe('account, subusers and feeds', () => {
    it('refuses a NUL or a line break in an email, and a NUL in a password', async () => {
      const user = await createUser(app);
      const { token } = await createApiKey(app, user);
      const put = (url: string, payload: Record<string, unknown>) =>
        app.http.inject({ method: 'PUT', url, headers: bearer(token), payload });
      for (const email of ['a\u0000@example.com', 'a@example.com\n', 'a\u202e@example.com']) {
        const res = await put('/api/client/account/email', { email, password: user.password });
        expectValidation(res, { email: 'no_control_characters' });
      }
      expectValidation(
        await put('/api/client/account/password', {
          current_password: user.password,
          password: 'new\u0000password',
          password_confirmation: 'new\u0000password',
        }),
        { password: 'no_control_characters', password_confirmation: 'no_control_characters' },
      );
      expectValidation(
        await put('/api/client/account/email', { email: 'b@example.com', password: 'x\u0000' }),
        { password: 'no_control_characters' },
      );
    });

    it('refuses a NUL in a subuser email, and a bidi control in a feed filter', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token } = await createApiKey(app, owner);
      const res = await post(`/api/client/servers/${server.identifier}/users`, token, {
        email: 'a\u0000@example.com',
        permissions: [],
      });
      expectValidation(res, { email: 'no_control_characters' });
      const feed = await app.http.inject({
        method: 'GET',
        url: '/api/client/activity?filter[event]=%E2%80%AEauth',
        headers: bearer(token),
      });
      expectValidation(feed, { 'filter[event]': 'no_control_characters' });
    });

    it('answers 404, never a 500, to a NUL in an id of a path', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      const { token, identifier } = await createApiKey(app, owner);
      const base = `/api/client/servers/${server.identifier}`;
      for (const [method, url] of [
        ['GET', `/api/client/servers/${server.id}%00`],
        ['GET', `${base}/backups/00000000-0000-4000-8000-000000000000%00`],
        ['GET', `${base}/users/${owner.id}%00`],
        ['DELETE', `/api/client/account/api-keys/${identifier}%00`],
      ] as const) {
        const res = await app.http.inject({ method, url, headers: bearer(token) });
        expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(404);
      }
    });
  });

  describe('the services behind the command line', () => {
    it.each(REFUSED_CASES)(
      'refuse a %s in a first name, a last name or a server name',
      async (_name, text) => {
        const { users, servers } = app.services;
        const username = `u${Date.now()}${Math.random().toString(36).slice(2, 8)}`;
        await expect(
          users.create({ username, email: `${username}@example.com`, firstName: text }),
        ).rejects.toMatchObject({
          status: 422,
          fields: [{ field: 'first_name', rule: 'no_control_characters' }],
        });
        await expect(
          users.create({ username, email: `${username}@example.com`, lastName: text }),
        ).rejects.toMatchObject({ fields: [{ field: 'last_name' }] });
        await expect(servers.create({ owner: 'nobody', name: text })).rejects.toMatchObject({
          fields: [{ field: 'name', rule: 'no_control_characters' }],
        });
        expect(await users.findByLogin(username)).toBeUndefined();
      },
    );

    it('refuse a NUL in an email or a password, and control characters in an API key description', async () => {
      const { users, apiKeys } = app.services;
      await expect(
        users.create({ username: 'nul-email', email: 'nul\u0000@example.com' }),
      ).rejects.toMatchObject({ status: 422, fields: [{ field: 'email' }] });
      await expect(
        users.create({
          username: 'nul-password',
          email: 'nul-password@example.com',
          password: 'password\u0000',
        }),
      ).rejects.toMatchObject({ fields: [{ field: 'password', rule: 'no_control_characters' }] });
      const owner = await createUser(app);
      await expect(createApiKey(app, owner, { description: 'line\nbreak' })).rejects.toMatchObject({
        fields: [{ field: 'description', rule: 'no_control_characters' }],
      });
      await expect(
        apiKeys.create(
          {
            batch: 'x',
            ip: null,
            userAgent: 'test',
            actor: { user: owner, apiKeyId: null, sessionId: null },
          },
          { description: 'nul\u0000', allowed_ips: [] },
        ),
      ).rejects.toMatchObject({ status: 422 });
    });

    it('keep names in any script exactly, and line breaks in a server description', async () => {
      const owner = await createUser(app, { firstName: ORDINARY });
      expect(owner.firstName).toBe(ORDINARY);
      const description = 'Line one é\r\nline two 漢字\n\tindented 💥';
      const { server } = await app.services.servers.create({
        owner: owner.username,
        name: ORDINARY,
        description,
      });
      const row = await app.db.kysely
        .selectFrom('servers')
        .select(['name', 'description'])
        .where('id', '=', server.id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ name: ORDINARY, description });
      const stored = await app.db.kysely
        .selectFrom('users')
        .select('first_name')
        .where('id', '=', owner.id)
        .executeTakeFirstOrThrow();
      expect(stored.first_name).toBe(ORDINARY);
      await expect(
        app.services.servers.create({ owner: owner.username, name: 'x', description: 'a\u001bb' }),
      ).rejects.toMatchObject({ fields: [{ field: 'description', rule: 'no_control_characters' }] });
    });

    it('refuse a NUL in a backup name before archiving anything', async () => {
      const owner = await createUser(app);
      const server = await createServer(app, owner);
      await expect(
        app.services.backupManagement.createNow(server.identifier, 'a\u0000b'),
      ).rejects.toMatchObject({ fields: [{ field: 'name', rule: 'no_control_characters' }] });
      const rows = await app.db.kysely
        .selectFrom('backups')
        .select('id')
        .where('server_id', '=', server.id)
        .execute();
      expect(rows).toEqual([]);
    });

    it('the command line says which field is refused, and exits non-zero', async () => {
      const aerie = spawnAerie(app, [
        'user',
        'create',
        '--username',
        'escaped',
        '--email',
        'escaped@example.com',
        '--first-name',
        'a\u001b[2Jb',
      ]);
      expect(await aerie.exited).toBe(1);
      expect(aerie.output()).toContain('aerie: The first_name field must not contain control characters.');
      expect(await app.services.users.findByLogin('escaped')).toBeUndefined();
    }, 90_000); // a process of its own, started from the sources
  });
});

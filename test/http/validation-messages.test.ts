/**
 * The words of a 422, through the real routes: each failing field gets one complete sentence that
 * says what is wrong and what is expected, counts in the number it takes ("1 character", "6
 * characters"), names formats ("a valid email address", "a valid IP address or CIDR range") and
 * allowed values, names array items by their index (`allowed_ips.2`), and leaks none of Ajv's own
 * words ("must be integer", "must NOT have additional properties", "must match pattern"). The
 * envelope, the field names and the rules are the contract clients read (docs/api.md, "Errors");
 * only the sentences are checked here.
 */
import type { ErrorObject as AjvError } from 'ajv';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toFieldErrors, validatorCompiler } from '../../src/http/validation.ts';
import { expectValidation, type ErrorObject } from '../support/expect-error.ts';
import {
  bearer,
  createApiKey,
  createServer,
  createUser,
  startTestApp,
  type TestApp,
} from '../support/harness.ts';

/** What Ajv says when it is let speak: none of it may reach a client. */
const AJV_WORDS = [
  /must be (integer|string|number|boolean|object|array|null)\b/,
  /must NOT/,
  /must match (pattern|format|a schema|exactly one)/,
  /must be equal to/,
  /must have required property/,
  /must be a valid value/,
  /\b1 (characters|items)\b/,
];

let app: TestApp;
let token: string;
let password: string;
let server: string;
/** Every sentence a test saw, checked as a whole at the end. */
const seen: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
  const user = await createUser(app);
  ({ token } = await createApiKey(app, user));
  password = user.password;
  server = (await createServer(app, user)).identifier;
});
afterAll(async () => app.close());

function send(method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) {
  return app.http.inject({
    method,
    url,
    headers: { ...bearer(token), 'content-type': 'application/json' },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
}

/** The 422's sentences by field, after checking that the envelope and the rules are as given. */
function sentences(res: LightMyRequestResponse, rules: Record<string, string>): Record<string, string> {
  expectValidation(res, rules);
  const errors = res.json<{ errors: ErrorObject[] }>().errors;
  const out = Object.fromEntries(errors.map((e) => [e.meta!.source_field, e.meta!.message]));
  seen.push(...Object.values(out));
  return out;
}

describe('the sentences of a 422', () => {
  it('asks for what is missing or empty, and says what type a value must be', async () => {
    expect(
      sentences(await send('POST', '/auth/login', {}), { user: 'required', password: 'required' }),
    ).toEqual({
      user: 'The user field is required.',
      password: 'The password field is required.',
    });
    expect(
      sentences(await send('POST', '/auth/login', { user: '', password: '' }), {
        user: 'min',
        password: 'min',
      }),
    ).toEqual({ user: 'The user field is required.', password: 'The password field is required.' });
    expect(
      sentences(await send('POST', '/auth/login', { user: 5, password: true }), {
        user: 'string',
        password: 'string',
      }),
    ).toEqual({ user: 'The user field must be a string.', password: 'The password field must be a string.' });
    expect(
      sentences(await send('POST', `/api/client/servers/${server}/backups`, { is_locked: 'yes' }), {
        is_locked: 'boolean',
      }),
    ).toEqual({ is_locked: 'The is_locked field must be true or false.' });
    expect(
      sentences(await send('POST', '/api/client/account/api-keys', { allowed_ips: '10.0.0.1' }), {
        allowed_ips: 'array',
      }),
    ).toEqual({ allowed_ips: 'The allowed_ips field must be an array.' });
  });

  it('names the body when the whole of it is wrong', async () => {
    for (const payload of [[], 'text', 5]) {
      expect(
        sentences(await send('POST', '/api/client/account/api-keys', payload), { body: 'object' }),
      ).toEqual({
        body: 'The request body must be a JSON object.',
      });
    }
  });

  it('counts characters and items in the number they take', async () => {
    expect(
      sentences(
        await send('PUT', '/api/client/account/password', {
          current_password: password,
          password: 'short',
          password_confirmation: 'short',
        }),
        { password: 'min' },
      ),
    ).toEqual({ password: 'The password field must be at least 8 characters.' });
    // A code of exactly six: said once, whichever side it misses on.
    for (const code of ['12345', '1234567']) {
      const res = await send('POST', '/api/client/account/two-factor', { code, password });
      expect(sentences(res, { code: code.length < 6 ? 'min' : 'max' })).toEqual({
        code: 'The code field must be exactly 6 characters.',
      });
    }
    expect(
      sentences(
        await send('POST', '/api/client/account/api-keys', {
          description: 'x'.repeat(501),
          allowed_ips: Array.from({ length: 51 }, (_, i) => `10.0.0.${i}`),
        }),
        { description: 'max', allowed_ips: 'max' },
      ),
    ).toEqual({
      description: 'The description field must not be longer than 500 characters.',
      allowed_ips: 'The allowed_ips field must not have more than 50 items.',
    });
    expect(
      sentences(await send('GET', `/download/backup?token=${'x'.repeat(8193)}`), { token: 'max' }),
    ).toEqual({ token: 'The token field must not be longer than 8192 characters.' });
  });

  it('names formats, and each array item that fails by its index', async () => {
    expect(
      sentences(await send('PUT', '/api/client/account/email', { email: 'not-an-email', password }), {
        email: 'email',
      }),
    ).toEqual({ email: 'The email field must be a valid email address.' });
    expect(
      sentences(
        await send('POST', '/api/client/account/api-keys', {
          allowed_ips: ['10.0.0.1', '2001:db8::/32', '10.0.0.0/33', 'not-an-ip', 7],
        }),
        { 'allowed_ips.2': 'ip', 'allowed_ips.3': 'ip', 'allowed_ips.4': 'ip' },
      ),
    ).toEqual({
      'allowed_ips.2': 'The allowed_ips.2 field must be a valid IP address or CIDR range.',
      'allowed_ips.3': 'The allowed_ips.3 field must be a valid IP address or CIDR range.',
      'allowed_ips.4': 'The allowed_ips.4 field must be a valid IP address or CIDR range.',
    });
    expect(
      sentences(
        await send('POST', `/api/client/servers/${server}/users`, {
          email: 'someone',
          permissions: ['backup.read', 'backup.explode'],
        }),
        { email: 'email', 'permissions.1': 'in' },
      ),
    ).toEqual({
      email: 'The email field must be a valid email address.',
      'permissions.1':
        'The permissions.1 field must be "activity.read", "backup.read", "backup.create", "backup.delete", ' +
        '"backup.download", "backup.restore", "schedule.read", "schedule.create", "schedule.update", ' +
        '"schedule.delete", "user.read", "user.create", "user.update" or "user.delete".',
    });
  });

  it('says which values and bounds a query takes', async () => {
    const res = await send('GET', '/api/client/activity?sort=newest&per_page=0&page=2.5&filter[actor]=x');
    expect(
      sentences(res, { sort: 'in', per_page: 'min', page: 'integer', 'filter[actor]': 'allowed' }),
    ).toEqual({
      sort: 'The sort field must be "timestamp" or "-timestamp".',
      per_page: 'The per_page field must be at least 1.',
      page: 'The page field must be an integer.',
      'filter[actor]':
        'The filter[actor] filter is not supported; use filter[event], filter[ip] or filter[actor_id].',
    });
    expect(
      sentences(await send('GET', '/api/client/activity?per_page=101&filter[actor_id]=me'), {
        per_page: 'max',
        'filter[actor_id]': 'uuid',
      }),
    ).toEqual({
      per_page: 'The per_page field must not be greater than 100.',
      'filter[actor_id]': 'The filter[actor_id] filter must be a user UUID or "system".',
    });
    expect(sentences(await send('GET', '/api/client?type=mine'), { type: 'in' })).toEqual({
      type: 'The type field must be "owner", "admin" or "admin-all".',
    });
  });

  it('says what a two-factor login needs', async () => {
    expect(
      sentences(await send('POST', '/auth/login/checkpoint', { confirmation_token: 'x' }), {
        authentication_code: 'required',
        recovery_token: 'required',
      }),
    ).toEqual({
      authentication_code: 'The authentication_code field is required when recovery_token is not present.',
      recovery_token: 'The recovery_token field is required when authentication_code is not present.',
    });
    expect(
      sentences(
        await send('POST', '/auth/login/checkpoint', {
          confirmation_token: 'x',
          authentication_code: 1234567,
          recovery_token: 'x'.repeat(256),
        }),
        { authentication_code: 'numeric', recovery_token: 'string' },
      ),
    ).toEqual({
      authentication_code:
        'The authentication_code field must be the 6-digit code from an authenticator app.',
      recovery_token:
        'The recovery_token field must be a string of at most 255 characters, without control characters.',
    });
  });

  it('says a new password and its confirmation differ', async () => {
    const res = await send('PUT', '/api/client/account/password', {
      current_password: password,
      password: 'a new password',
      password_confirmation: 'another one',
    });
    expect(sentences(res, { password: 'confirmed' })).toEqual({
      password: 'The password_confirmation field must match the password field.',
    });
  });

  it('never lets Ajv speak: every sentence seen starts with "The" and ends with a full stop', () => {
    expect(seen.length).toBeGreaterThan(30);
    for (const sentence of seen) {
      expect(sentence).toMatch(/^The .+\.$/);
      for (const words of AJV_WORDS) expect(sentence).not.toMatch(words);
    }
  });
});

/** The 422 sentences a schema's failures give, through the compiler the routes use. */
function wordsOf(
  schema: object,
  data: unknown,
  part: 'body' | 'querystring' = 'body',
): Record<string, string> {
  const validate = validatorCompiler({ schema, httpPart: part, method: 'POST', url: '/' }) as ((
    data: unknown,
  ) => boolean) & { errors?: AjvError[] | null };
  expect(validate(data)).toBe(false);
  return Object.fromEntries(toFieldErrors(validate.errors ?? [], part).map((e) => [e.field, e.message]));
}

describe('the sentences of limits no route has yet', () => {
  it('says one character and one item in the singular', () => {
    const schema = {
      type: 'object',
      properties: {
        initial: { type: 'string', maxLength: 1 },
        pair: { type: 'string', minLength: 2 },
        tags: { type: 'array', minItems: 1, maxItems: 3 },
        only: { type: 'array', maxItems: 1 },
      },
    };
    expect(wordsOf(schema, { initial: 'ab', pair: 'a', tags: [], only: [1, 2] })).toEqual({
      initial: 'The initial field must not be longer than 1 character.',
      pair: 'The pair field must be at least 2 characters.',
      tags: 'The tags field must have at least 1 item.',
      only: 'The only field must not have more than 1 item.',
    });
  });

  it('names the formats it knows', () => {
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'string', format: 'uuid' },
        at: { type: 'string', format: 'date-time' },
        day: { type: 'string', format: 'date' },
        ip: { type: 'string', format: 'ip-or-cidr' },
        site: { type: 'string', format: 'uri' },
      },
    };
    expect(
      wordsOf(schema, { id: 'x', at: 'yesterday', day: '06/05/2026', ip: '300.1.1.1', site: 'nope' }),
    ).toEqual({
      id: 'The id field must be a valid UUID.',
      at: 'The at field must be a valid date and time, such as 2026-05-06T07:08:09+00:00.',
      day: 'The day field must be a valid date, such as 2026-05-06.',
      ip: 'The ip field must be a valid IP address or CIDR range.',
      site: 'The site field must be a valid URL.',
    });
  });

  it('names a property that is not allowed, and values of an enum', () => {
    const schema = {
      type: 'object',
      properties: { colour: { enum: ['red', 'green'] }, count: { type: ['integer', 'null'] } },
      additionalProperties: false,
    };
    expect(wordsOf(schema, { colour: 'blue', count: 'many', extra: 1 })).toEqual({
      colour: 'The colour field must be "red" or "green".',
      count: 'The count field must be an integer or null.',
      extra: 'The extra field is not allowed.',
    });
  });
});

import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';

export interface ErrorObject {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field: string; rule: string; message: string };
}

/** Asserts the whole body is the error envelope with exactly one error object. */
export function expectError(res: LightMyRequestResponse, status: number, code: string, detail: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ errors: [{ code, status: String(status), detail }] });
}

/**
 * Asserts a 422 whose errors are exactly one ValidationException per listed field, with the
 * given rule (order of the errors is not part of the contract).
 */
export function expectValidation(res: LightMyRequestResponse, fields: Record<string, string>): void {
  expect(res.statusCode, res.body).toBe(422);
  const errors = res.json<{ errors: ErrorObject[] }>().errors;
  const anyString: unknown = expect.any(String);
  for (const error of errors) {
    expect(error).toEqual({
      code: 'ValidationException',
      status: '422',
      detail: 'The given data was invalid.',
      meta: { source_field: anyString, rule: anyString, message: anyString },
    });
  }
  const got = Object.fromEntries(errors.map((e) => [e.meta?.source_field ?? '', e.meta?.rule ?? '']));
  expect(got).toEqual(fields);
  expect(errors).toHaveLength(Object.keys(fields).length);
}

import type { FieldError } from '../shared/errors.ts';

export interface ErrorObject {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field: string; rule: string; message: string };
}

export function errorEnvelope(status: number, code: string, detail: string): { errors: ErrorObject[] } {
  return { errors: [{ code, status: String(status), detail }] };
}

/** One error object per failing field, as the reference panel writes a ValidationException. */
export function validationEnvelope(fields: FieldError[]): { errors: ErrorObject[] } {
  return {
    errors: fields.map((field) => ({
      code: 'ValidationException',
      status: '422',
      detail: 'The given data was invalid.',
      meta: { source_field: field.field, rule: field.rule, message: field.message },
    })),
  };
}

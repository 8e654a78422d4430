import type { FieldError } from '../shared/errors.ts';

export interface ErrorObject {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field: string; rule: string; message: string };
}

/** One error object; with `field`, its `meta` names the field at fault. */
export function errorEnvelope(
  status: number,
  code: string,
  detail: string,
  field?: FieldError,
): { errors: ErrorObject[] } {
  const error: ErrorObject = { code, status: String(status), detail };
  if (field !== undefined)
    error.meta = { source_field: field.field, rule: field.rule, message: field.message };
  return { errors: [error] };
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

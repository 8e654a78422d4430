import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../shared/errors.ts';
import { ignoredProblem } from '../backups/ignore-patterns.ts';
import { isIpOrCidr } from '../shared/ip.ts';
import { describe } from './validation-messages.ts';

/** Ajv with Aerie's formats, and the keywords a schema words its failures with (validation-messages.ts). */
function newAjv(options: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: false, ...options });
  // ajv-formats is CommonJS: its function is the module itself, typed as `.default`.
  (formats as unknown as typeof formats.default)(ajv);
  ajv.addKeyword({ keyword: 'x-rule', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  ajv.addFormat('ip-or-cidr', { type: 'string', validate: isIpOrCidr });
  ajv.addFormat('backup-ignored', { type: 'string', validate: (text) => ignoredProblem(text) === null });
  return ajv;
}

// Query strings and paths are text, so numbers and booleans are coerced there; a repeated
// parameter stays an array and fails. JSON bodies are taken as typed: `"true"` is no boolean.
const textAjv = newAjv({ coerceTypes: true });
const jsonAjv = newAjv({ coerceTypes: false });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return jsonAjv.compile(schema as object);
  return asQueryRules(textAjv.compile(schema as object), schema as JsonObject);
};

type JsonObject = { properties?: Record<string, { type?: unknown }> } & Record<string, unknown>;

/** Plain decimal digits, optionally negative (so that `-1` is refused by `min`, not as a non-number). */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Ajv coerces text to a number with `Number()`, which also takes ` 1`, `0x10`, `1e2` and `+5`.
 * An integer field of a query string (or path, or header) must be written in decimal digits: any
 * other string fails as `integer` before Ajv coerces it. The schema itself is untouched, so the
 * OpenAPI document still shows an integer.
 *
 * A parameter the schema refuses outright (an unknown `filter[…]`) is told the parameters there
 * are, so that its message can name the ones to use instead.
 */
function asQueryRules(validate: ValidateFunction, schema: JsonObject): ValidateFunction {
  const properties = Object.entries(schema.properties ?? {});
  const integers = properties.filter(([, property]) => property.type === 'integer');
  const known = properties.map(([name]) => name);
  const check = (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean => {
    const refused = typeof data === 'object' && data !== null ? nonDecimal(data, integers) : [];
    const valid = validate(data, context);
    const others = (validate.errors ?? [])
      .filter((error) => !refused.some((r) => error.instancePath === r.instancePath))
      .map((error) =>
        error.keyword === 'false schema' ? { ...error, params: { ...error.params, known } } : error,
      );
    checked.errors = refused.length + others.length > 0 ? [...refused, ...others] : null;
    return valid && refused.length === 0;
  };
  // Fastify hands Ajv functions (those with a schemaEnv) the parent object, so coercion works.
  const checked = Object.assign(check, {
    errors: null as ErrorObject[] | null,
    schema: validate.schema,
    schemaEnv: validate.schemaEnv,
  });
  return checked as unknown as ValidateFunction;
}

/** A `type: integer` error, as Ajv words one, for each integer field not written in decimal. */
function nonDecimal(data: object, integers: Array<[string, { type?: unknown }]>): ErrorObject[] {
  return integers.flatMap(([name, property]) => {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value !== 'string' || DECIMAL_INTEGER.test(value)) return [];
    const pointer = name.replace(/~/g, '~0').replace(/\//g, '~1');
    return [
      {
        keyword: 'type',
        instancePath: `/${pointer}`,
        schemaPath: `#/properties/${pointer}/type`,
        params: { type: 'integer' },
        message: 'must be integer',
        parentSchema: property,
        data: value,
      },
    ];
  });
}

/** The field an error is about: `per_page`, `allowed_ips.2`, or the property a `required` misses. */
function fieldOf(error: ErrorObject): string {
  const pointer = error.instancePath.replace(/^\//, '').split('/').filter(Boolean);
  if (error.keyword === 'required') pointer.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') pointer.push(String(error.params.additionalProperty));
  return pointer.map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
}

/**
 * Turns Ajv's errors into one FieldError per failing field (the first failure of each). A failure
 * of the whole value (a JSON body that is an array, say) is named after the part: `body`.
 */
export function toFieldErrors(errors: ErrorObject[], part = 'body'): FieldError[] {
  const byField = new Map<string, FieldError>();
  for (const error of errors) {
    // anyOf reports each branch's failure and then itself; the anyOf error alone says it best.
    if (error.schemaPath.includes('/anyOf/')) continue;
    const path = fieldOf(error);
    const field = path || part;
    if (!byField.has(field)) byField.set(field, { field, ...describe(error, path, part) });
  }
  return [...byField.values()];
}

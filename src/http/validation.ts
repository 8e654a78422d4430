import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../shared/errors.ts';
import { ignoredProblem } from '../backups/ignore-patterns.ts';
import { isIpOrCidr } from '../shared/ip.ts';
import { TEXT_RULE, textKindOfPattern, textRuleMessage } from '../shared/text.ts';

/**
 * Schemas may name the rule a failure breaks (`x-rule`) and say it in words (`x-message`);
 * otherwise both are derived from the JSON Schema keyword that failed.
 */
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
  return decimalIntegersOnly(textAjv.compile(schema as object), schema as JsonObject);
};

type JsonObject = { properties?: Record<string, { type?: unknown }> } & Record<string, unknown>;

/** Plain decimal digits, optionally negative (so that `-1` is refused by `min`, not as a non-number). */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Ajv coerces text to a number with `Number()`, which also takes ` 1`, `0x10`, `1e2` and `+5`.
 * An integer field of a query string (or path, or header) must be written in decimal digits: any
 * other string fails as `integer` before Ajv coerces it. The schema itself is untouched, so the
 * OpenAPI document still shows an integer.
 */
function decimalIntegersOnly(validate: ValidateFunction, schema: JsonObject): ValidateFunction {
  const integers = Object.entries(schema.properties ?? {}).filter(
    ([, property]) => property.type === 'integer',
  );
  if (integers.length === 0) return validate;
  const check = (data: unknown, context?: Parameters<ValidateFunction>[1]): boolean => {
    const refused = typeof data === 'object' && data !== null ? nonDecimal(data, integers) : [];
    const valid = validate(data, context);
    const others = (validate.errors ?? []).filter(
      (error) => !refused.some((r) => error.instancePath === r.instancePath),
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

function fieldOf(error: ErrorObject): string {
  const pointer = error.instancePath.replace(/^\//, '').split('/').filter(Boolean);
  if (error.keyword === 'required') pointer.push(String(error.params.missingProperty));
  return pointer.map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~')).join('.');
}

function describe(error: ErrorObject, field: string): { rule: string; message: string } {
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  const limit = (error.params as { limit?: unknown }).limit;
  const named = typeof schema['x-rule'] === 'string' ? schema['x-rule'] : undefined;
  const said = typeof schema['x-message'] === 'string' ? schema['x-message'] : undefined;
  const [rule, message] = ((): [string, string] => {
    switch (error.keyword) {
      case 'required':
        return ['required', `The ${field} field is required.`];
      case 'type': {
        const type = String((error.params as { type?: unknown }).type);
        return [type === 'number' ? 'numeric' : type, `The ${field} field must be ${article(type)} ${type}.`];
      }
      case 'minimum':
        return ['min', `The ${field} field must be at least ${String(limit)}.`];
      case 'maximum':
        return ['max', `The ${field} field must not be greater than ${String(limit)}.`];
      case 'minLength':
        // An empty value where one character is the least: said as Laravel says of a missing one
        // (the rule stays `min`, as clients read it).
        if (limit === 1) return ['min', `The ${field} field is required.`];
        return ['min', `The ${field} field must be at least ${String(limit)} characters.`];
      case 'maxLength':
        return ['max', `The ${field} field must not be greater than ${String(limit)} characters.`];
      case 'minItems':
        return ['min', `The ${field} field must have at least ${String(limit)} items.`];
      case 'maxItems':
        return ['max', `The ${field} field must not have more than ${String(limit)} items.`];
      case 'enum':
      case 'const':
      case 'anyOf':
        return ['in', `The selected ${field} is invalid.`];
      case 'format':
        return [
          String((error.params as { format?: unknown }).format),
          `The ${field} field must be a valid value.`,
        ];
      case 'pattern': {
        // The text rule's patterns say what they refuse; any other pattern is Laravel's `regex`.
        const kind = textKindOfPattern(String((error.params as { pattern?: unknown }).pattern));
        if (kind !== undefined) return [TEXT_RULE, textRuleMessage(field, kind)];
        return ['regex', `The ${field} field format is invalid.`];
      }
      case 'false schema':
        return ['allowed', `The ${field} parameter is not allowed.`];
      default:
        return [error.keyword, `The ${field} field is invalid.`];
    }
  })();
  return { rule: named ?? rule, message: said?.replace(':field', field) ?? message };
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
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
    const field = fieldOf(error) || part;
    if (!byField.has(field)) byField.set(field, { field, ...describe(error, field) });
  }
  return [...byField.values()];
}

import type { ErrorObject } from 'ajv';
import { TEXT_RULE, textKindOfPattern, textRuleMessage } from '../shared/text.ts';

/**
 * The words of a 422: one sentence per failing field, in the reference panel's manner ("The name
 * field is required."), that says what is wrong and what would be right. The rule (`meta.rule`)
 * is the name clients read and match on; the sentence is for people and may get better.
 *
 * Schemas may name the rule a failure breaks (`x-rule`) and say it in words (`x-message`, where
 * `:field` stands for the field); otherwise both follow from the JSON Schema keyword that failed.
 */
export interface Described {
  rule: string;
  message: string;
}

/** What a value must be, for each JSON type (a boolean is `true` or `false`, as JSON writes it). */
const TYPES: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** What a value must be, for each format a schema may name. */
const FORMATS: Record<string, string> = {
  email: 'a valid email address',
  uuid: 'a valid UUID',
  'date-time': 'a valid date and time, such as 2026-05-06T07:08:09+00:00',
  date: 'a valid date, such as 2026-05-06',
  time: 'a valid time, such as 07:08:09',
  ipv4: 'a valid IPv4 address',
  ipv6: 'a valid IPv6 address',
  'ip-or-cidr': 'a valid IP address or CIDR range',
  hostname: 'a valid host name',
  uri: 'a valid URL',
  url: 'a valid URL',
};

/** Up to this many allowed values are listed in a sentence; past it, only how many there are. */
const VALUES_LISTED = 16;

/** "1 character", "6 characters", "1 item": a count with its noun in the number it takes. */
function count(limit: unknown, one: string, other = `${one}s`): string {
  return `${String(limit)} ${limit === 1 ? one : other}`;
}

/** "a", "a or b", "a, b or c". */
function either(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** What each part of a request is called when the whole of it fails. */
const PARTS: Record<string, string> = {
  body: 'The request body',
  querystring: 'The query string',
  params: 'The path',
  headers: 'The headers',
};

/** The start of a sentence about a field: a query's `filter[…]` is a filter. */
function subject(field: string): string {
  return `The ${field} ${field.startsWith('filter[') ? 'filter' : 'field'}`;
}

/** The values an `enum`, a `const` or an `anyOf` of constants allows; undefined for other anyOfs. */
function allowedValues(error: ErrorObject): unknown[] | undefined {
  const params = error.params as { allowedValues?: unknown[]; allowedValue?: unknown };
  if (error.keyword === 'enum') return params.allowedValues;
  if (error.keyword === 'const') return [params.allowedValue];
  const branches = ((error.parentSchema ?? {}) as { anyOf?: unknown[] }).anyOf ?? [];
  const constants = branches.map((branch) =>
    typeof branch === 'object' && branch !== null && 'const' in branch ? [branch.const] : [],
  );
  return branches.length > 0 && constants.every((c) => c.length === 1) ? constants.flat() : undefined;
}

function oneOfValues(the: string, values: unknown[] | undefined): string {
  if (values === undefined || values.length === 0) return `${the} is not one of the accepted values.`;
  if (values.length > VALUES_LISTED) return `${the} must be one of the ${values.length} accepted values.`;
  return `${the} must be ${either(values.map((value) => JSON.stringify(value)))}.`;
}

function typeMessage(the: string, type: unknown): string {
  const types = (Array.isArray(type) ? type : String(type).split(',')).map(String);
  return `${the} must be ${either(types.map((t) => TYPES[t] ?? `of type ${t}`))}.`;
}

/** The known parameters of the same family as an unknown one (`filter[…]`), when the query told them. */
function knownOfFamily(error: ErrorObject, field: string): string[] {
  const known = (error.params as { known?: unknown }).known;
  const family = field.includes('[') ? field.slice(0, field.indexOf('[') + 1) : null;
  if (!Array.isArray(known) || family === null) return [];
  return known.map(String).filter((name) => name.startsWith(family));
}

/**
 * The rule and the sentence for one Ajv error about the field at `path` of the request's `part` (`body`,
 * `querystring`); a `path` of '' is the whole part.
 */
export function describe(error: ErrorObject, path: string, part: string): Described {
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  const params = error.params as Record<string, unknown>;
  const limit = params.limit;
  const field = path === '' ? part : path;
  const the = path === '' ? (PARTS[part] ?? `The ${part}`) : subject(field);
  const named = typeof schema['x-rule'] === 'string' ? schema['x-rule'] : undefined;
  const said = typeof schema['x-message'] === 'string' ? schema['x-message'] : undefined;
  const [rule, message] = ((): [string, string] => {
    switch (error.keyword) {
      case 'required':
        return ['required', `${the} is required.`];
      case 'type': {
        const type = String(params.type);
        const rule = type === 'number' ? 'numeric' : type;
        if (path === '' && part === 'body') return [rule, `${the} must be a JSON ${type}.`];
        return [rule, typeMessage(the, params.type)];
      }
      case 'minimum':
        return ['min', `${the} must be at least ${String(limit)}.`];
      case 'maximum':
        return ['max', `${the} must not be greater than ${String(limit)}.`];
      case 'exclusiveMinimum':
        return ['gt', `${the} must be greater than ${String(limit)}.`];
      case 'exclusiveMaximum':
        return ['lt', `${the} must be less than ${String(limit)}.`];
      case 'multipleOf':
        return ['multiple_of', `${the} must be a multiple of ${String(params.multipleOf)}.`];
      case 'minLength':
        // An empty value where one character is the least: said as Laravel says of a missing one
        // (the rule stays `min`, as clients read it).
        if (limit === 1) return ['min', `${the} is required.`];
        if (schema.maxLength === limit)
          return ['min', `${the} must be exactly ${count(limit, 'character')}.`];
        return ['min', `${the} must be at least ${count(limit, 'character')}.`];
      case 'maxLength':
        if (schema.minLength === limit)
          return ['max', `${the} must be exactly ${count(limit, 'character')}.`];
        return ['max', `${the} must not be longer than ${count(limit, 'character')}.`];
      case 'minItems':
        return ['min', `${the} must have at least ${count(limit, 'item')}.`];
      case 'maxItems':
        return ['max', `${the} must not have more than ${count(limit, 'item')}.`];
      case 'uniqueItems':
        return ['distinct', `${the} must not hold the same item twice.`];
      case 'enum':
      case 'const':
      case 'anyOf':
        return ['in', oneOfValues(the, allowedValues(error))];
      case 'format': {
        const format = String(params.format);
        const expected = FORMATS[format];
        return [format, expected === undefined ? `${the} format is invalid.` : `${the} must be ${expected}.`];
      }
      case 'pattern': {
        // The text rule's patterns say what they refuse; any other pattern is Laravel's `regex`.
        const kind = textKindOfPattern(String(params.pattern));
        if (kind !== undefined) return [TEXT_RULE, textRuleMessage(field, kind)];
        return ['regex', `${the} format is invalid.`];
      }
      case 'additionalProperties':
      case 'false schema': {
        const known = knownOfFamily(error, field);
        const noun = field.startsWith('filter[') ? 'filter' : part === 'body' ? 'field' : 'parameter';
        if (known.length === 0) return ['allowed', `The ${field} ${noun} is not allowed.`];
        return ['allowed', `The ${field} ${noun} is not supported; use ${either(known)}.`];
      }
      default:
        return [error.keyword, `${the} is invalid.`];
    }
  })();
  return { rule: named ?? rule, message: said?.replace(':field', field) ?? message };
}

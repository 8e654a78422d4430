/**
 * The text rule (text-rules.ts) as request schemas: the JSON Schema strings of each kind of
 * text, beside the rule itself. (The rule lives apart so that threads which only check text,
 * such as a backup's, do not load the schema library.)
 */
import { Type, type StringOptions } from '@sinclair/typebox';
import { RULES } from './text-rules.ts';

export {
  assertText,
  isText,
  TEXT_RULE,
  textKindOfPattern,
  textRuleMessage,
  type TextKind,
} from './text-rules.ts';

/** A string without a NUL: passwords, tokens, anything not shown back as written. */
export function AnyText(options: StringOptions = {}) {
  return Type.String({ ...options, pattern: RULES.any.pattern });
}

/** A string that is one line of text: names, descriptions, usernames, emails, filters. */
export function SingleLineText(options: StringOptions = {}) {
  return Type.String({ ...options, pattern: RULES['single-line'].pattern });
}

/** A string that may hold several lines (and tabs), but no other control character. */
export function MultiLineText(options: StringOptions = {}) {
  return Type.String({ ...options, pattern: RULES['multi-line'].pattern });
}

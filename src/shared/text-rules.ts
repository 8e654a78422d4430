import { ValidationError } from './errors.ts';

/**
 * The one rule for text Aerie stores or looks up, so that it reads the same on every engine and
 * on every screen it is shown on:
 *
 * - any text: no NUL. PostgreSQL refuses one in any query, SQLite and MariaDB store it, and
 *   some of SQLite's functions stop at it: the same request would mean three things.
 * - single-line text (names, descriptions, usernames, emails, filters): no C0 control (U+0000 to
 *   U+001F, the tab and line breaks included), no DEL or C1 control (U+007F to U+009F), no line or
 *   paragraph separator (U+2028, U+2029) and no bidirectional embedding, override or isolate
 *   (U+202A to U+202E, U+2066 to U+2069), which make a name read other than it is
 *   (`invoice\u202Egpj.exe` shows as `invoiceexe.jpg`) or repaint a terminal.
 * - multi-line text (`ignored` patterns, a server's description): the same, but tabs and line
 *   breaks (LF, CR) are welcome.
 *
 * Every character named is in the Basic Multilingual Plane and none is a surrogate, so each
 * pattern means the same with or without a regular expression's `u` flag: clients reading the
 * OpenAPI document can check it themselves.
 */
export type TextKind = 'any' | 'single-line' | 'multi-line';

const LAYOUT = '\\u2028-\\u202e\\u2066-\\u2069';

export const RULES: Record<TextKind, { pattern: string; refused: string }> = {
  any: { pattern: '^[^\\u0000]*$', refused: 'NUL characters' },
  'single-line': {
    pattern: `^[^\\u0000-\\u001f\\u007f-\\u009f${LAYOUT}]*$`,
    refused: 'control characters',
  },
  'multi-line': {
    pattern: `^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f${LAYOUT}]*$`,
    refused: 'control characters other than tabs and line breaks',
  },
};

/** The rule name a refusal carries (`meta.rule` of a 422), whichever kind of text it was. */
export const TEXT_RULE = 'no_control_characters';

const CHECKS = Object.fromEntries(
  Object.entries(RULES).map(([kind, { pattern }]) => [kind, new RegExp(pattern)]),
) as Record<TextKind, RegExp>;

/** What a field of the kind must not hold, said to whoever sent it (a query's `filter[…]` is a filter). */
export function textRuleMessage(field: string, kind: TextKind): string {
  const noun = field.startsWith('filter[') ? 'filter' : 'field';
  return `The ${field} ${noun} must not contain ${RULES[kind].refused}.`;
}

/** The kind of text a JSON Schema `pattern` stands for, if it is one of the rule's. */
export function textKindOfPattern(pattern: string): TextKind | undefined {
  return (Object.keys(RULES) as TextKind[]).find((kind) => RULES[kind].pattern === pattern);
}

export function isText(text: string, kind: TextKind): boolean {
  return CHECKS[kind].test(text);
}

/**
 * Refuses text outside the rule with a 422 naming the field: the check of services that text
 * reaches without a request schema (the command line), made before any query.
 */
export function assertText(field: string, text: string | undefined, kind: TextKind): void {
  if (text === undefined || isText(text, kind)) return;
  throw new ValidationError([{ field, rule: TEXT_RULE, message: textRuleMessage(field, kind) }]);
}

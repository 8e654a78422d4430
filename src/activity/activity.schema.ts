import { Type, type Static } from '@sinclair/typebox';
import { pagedListSchema, pageQuery } from '../shared/page.ts';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/**
 * No event or IP holds a control character, and a NUL in a LIKE pattern ends it early on SQLite
 * (`%\0%` reads as `%`, matching everything) and is refused by PostgreSQL: such a filter is a 422.
 */
const noControlCharacters = {
  pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
  'x-rule': 'no_control_characters',
  'x-message': 'The :field filter must not contain control characters.',
};

/** The query of every activity feed. Unknown `filter[…]` keys are refused, other keys ignored. */
export const ActivityQuerySchema = Type.Object(
  {
    'filter[event]': Type.Optional(
      Type.String({
        maxLength: 191,
        description: 'Part of the event name, any case.',
        ...noControlCharacters,
      }),
    ),
    'filter[ip]': Type.Optional(
      Type.String({
        maxLength: 45,
        description: 'Part of the IP address, any case.',
        ...noControlCharacters,
      }),
    ),
    'filter[actor_id]': Type.Optional(
      Type.String({
        pattern: `^(system|${UUID})$`,
        description: 'A user UUID, or `system` for entries written by the system.',
        'x-rule': 'uuid',
        'x-message': 'The :field filter must be a user UUID or "system".',
      }),
    ),
    sort: Type.Union([Type.Literal('timestamp'), Type.Literal('-timestamp')], {
      default: '-timestamp',
      description: 'Order by time; a leading minus means newest first.',
    }),
    ...pageQuery({ default: 25, maximum: 100 }),
  },
  { patternProperties: { '^filter\\[(?!(?:event|ip|actor_id)\\]$)': false } },
);
export type ActivityQuery = Static<typeof ActivityQuerySchema>;

const UserResourceSchema = Type.Object({
  object: Type.Literal('user'),
  attributes: Type.Object({
    uuid: Type.String({ format: 'uuid' }),
    username: Type.String(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
  }),
});

const NullResourceSchema = Type.Object({ object: Type.Literal('null_resource'), attributes: Type.Null() });

export const ActivityLogResourceSchema = Type.Object({
  object: Type.Literal('activity_log'),
  attributes: Type.Object({
    batch: Type.String({ format: 'uuid' }),
    event: Type.String(),
    is_api: Type.Boolean(),
    ip: Type.Union([Type.String(), Type.Null()]),
    description: Type.String(),
    properties: Type.Object({}, { additionalProperties: true }),
    has_additional_metadata: Type.Boolean(),
    timestamp: Type.String(),
  }),
  relationships: Type.Object({ actor: Type.Union([UserResourceSchema, NullResourceSchema]) }),
});
export type ActivityLogResource = Static<typeof ActivityLogResourceSchema>;

export const ActivityListSchema = pagedListSchema(ActivityLogResourceSchema);
export type ActivityList = Static<typeof ActivityListSchema>;

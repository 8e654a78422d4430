import { Type, type Static } from '@sinclair/typebox';
import { pagedListSchema, pageQuery } from '../shared/page.ts';
import { SingleLineText } from '../shared/text.ts';

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/**
 * The query of every activity feed. Unknown `filter[…]` keys are refused, other keys ignored.
 * The text filters are single-line text (shared/text.ts): no event or IP holds a control
 * character, and a NUL in a LIKE pattern ends it early on SQLite (`%\0%` reads as `%`, matching
 * everything) and is refused by PostgreSQL, so such a filter is a 422 (`no_control_characters`).
 */
export const ActivityQuerySchema = Type.Object(
  {
    'filter[event]': Type.Optional(
      SingleLineText({
        maxLength: 191,
        description: 'Part of the event name, any case.',
      }),
    ),
    'filter[ip]': Type.Optional(
      SingleLineText({
        maxLength: 45,
        description: 'Part of the IP address, any case.',
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

import { Type, type Static, type TInteger } from '@sinclair/typebox';

/** The most a rule may ask to keep (restic has no bound; 10,000 hourly backups is over a year). */
export const MAX_KEEP = 10_000;

const RULE_HELP = {
  keep_last: 'Keep the N newest automatic backups.',
  keep_hourly: 'For the last N hours that have an automatic backup, keep the newest of each hour.',
  keep_daily: 'For the last N days that have an automatic backup, keep the newest of each day.',
  keep_weekly:
    'For the last N weeks (ISO weeks, Monday to Sunday) that have an automatic backup, keep the newest of each.',
  keep_monthly: 'For the last N months that have an automatic backup, keep the newest of each month.',
  keep_yearly: 'For the last N years that have an automatic backup, keep the newest of each year.',
} as const;

type RuleField = keyof typeof RULE_HELP;

const count = (field: RuleField): TInteger =>
  Type.Integer({ minimum: 0, maximum: MAX_KEEP, description: RULE_HELP[field] });

function rules<T>(make: (field: RuleField) => T): Record<RuleField, T> {
  return {
    keep_last: make('keep_last'),
    keep_hourly: make('keep_hourly'),
    keep_daily: make('keep_daily'),
    keep_weekly: make('keep_weekly'),
    keep_monthly: make('keep_monthly'),
    keep_yearly: make('keep_yearly'),
  };
}

/**
 * A rule as sent: a count, or null. One rule and one sentence for any failure (a union's own
 * errors would only say "not one of the accepted values").
 */
const nullableCount = (field: RuleField) =>
  Type.Union([count(field), Type.Null()], {
    'x-rule': 'integer',
    'x-message': `The :field field must be a whole number from 0 to ${MAX_KEEP}, or null.`,
  });

/** A policy as sent: each rule a count, or null (or absent) for a rule that is off. */
export const RetentionPolicyBodySchema = Type.Object(
  rules((field) => Type.Optional(nullableCount(field))),
  {
    description:
      'The whole policy: a rule absent or null is off. With every rule off (or 0) the server has no policy and nothing is deleted.',
  },
);
export type RetentionPolicyBody = Static<typeof RetentionPolicyBodySchema>;

const policyAttributes = rules((field) => Type.Union([count(field), Type.Null()]));

export const RetentionPolicyResourceSchema = Type.Object({
  object: Type.Literal('backup_retention_policy'),
  attributes: Type.Object({
    ...policyAttributes,
    time_zone: Type.String({ description: 'The zone hours, days, weeks, months and years are counted in.' }),
    updated_at: Type.Union([Type.String(), Type.Null()], { description: 'Null: no policy was ever set.' }),
  }),
});
export type RetentionPolicyResource = Static<typeof RetentionPolicyResourceSchema>;

/** Preview a policy not saved yet: any rule given here replaces the saved policy as a whole. */
export const RetentionPreviewQuerySchema = Type.Object(rules((field) => Type.Optional(count(field))));
export type RetentionPreviewQuery = Static<typeof RetentionPreviewQuerySchema>;

const PreviewEntrySchema = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  name: Type.String(),
  created_at: Type.String(),
  is_automatic: Type.Boolean(),
  is_locked: Type.Boolean(),
  reasons: Type.Array(Type.String(), {
    description:
      'Why it is kept: `last 2` (the second newest), `hourly 2026-11-20 14:00`, `daily 2026-11-20`, `weekly 2026-W47`, `monthly 2026-11`, `yearly 2026`, `oldest daily 2026-11-02` (a rule with counts left keeps the oldest too), `locked`, `made by hand`, `in progress`, `failed`, `no policy`. Empty for a backup that would be deleted.',
  }),
});

export const RetentionPreviewSchema = Type.Object({
  object: Type.Literal('backup_retention_preview'),
  attributes: Type.Object({
    ...policyAttributes,
    time_zone: Type.String(),
    keep: Type.Array(PreviewEntrySchema, { description: 'Newest first.' }),
    delete: Type.Array(PreviewEntrySchema, {
      description: 'What applying the policy now would delete, newest first.',
    }),
  }),
});
export type RetentionPreview = Static<typeof RetentionPreviewSchema>;

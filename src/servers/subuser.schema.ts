import { Type, type Static } from '@sinclair/typebox';
import { listSchema } from '../shared/page.ts';
import { SingleLineText } from '../shared/text.ts';
import { SUBUSER_PERMISSIONS } from './permissions.ts';

/** One of SUBUSER_PERMISSIONS; anything else fails validation as `permissions.N` (rule `in`). */
export const PermissionSchema = Type.Union(
  SUBUSER_PERMISSIONS.map((permission) => Type.Literal(permission)),
  { description: 'A subuser permission.' },
);

/** A list of permissions; duplicates are accepted and stored once. May be empty. */
const PermissionListSchema = Type.Array(PermissionSchema, { maxItems: 50 });

export const SubuserResourceSchema = Type.Object({
  object: Type.Literal('server_subuser'),
  attributes: Type.Object({
    uuid: Type.String({ format: 'uuid', description: "The subuser's user UUID." }),
    username: Type.String(),
    email: Type.String(),
    image: Type.String({ description: 'A Gravatar URL for the email address.' }),
    '2fa_enabled': Type.Boolean(),
    created_at: Type.String({
      description: "When the user's account was created (as the reference panel reports it).",
    }),
    permissions: Type.Array(Type.String()),
  }),
});
export type SubuserResource = Static<typeof SubuserResourceSchema>;

export const SubuserListSchema = listSchema(SubuserResourceSchema);
export type SubuserList = Static<typeof SubuserListSchema>;

export const SubuserParamsSchema = Type.Object({
  server: SingleLineText({ maxLength: 64, description: 'The server UUID or its 8-character identifier.' }),
  user: SingleLineText({ maxLength: 64, description: "The subuser's user UUID." }),
});
export type SubuserParams = Static<typeof SubuserParamsSchema>;

export const CreateSubuserBodySchema = Type.Object({
  email: SingleLineText({
    format: 'email',
    maxLength: 191,
    description: 'The email address of an existing Aerie user (Aerie sends no invitations).',
  }),
  permissions: PermissionListSchema,
});
export type CreateSubuserBody = Static<typeof CreateSubuserBodySchema>;

export const UpdateSubuserBodySchema = Type.Object({
  permissions: PermissionListSchema,
});
export type UpdateSubuserBody = Static<typeof UpdateSubuserBodySchema>;

import { Type, type Static } from '@sinclair/typebox';
import { AnyText, SingleLineText } from '../shared/text.ts';

export const LoginBodySchema = Type.Object({
  // Refused here, before any look-up: the user is searched for, and no NUL reaches a query.
  user: SingleLineText({ minLength: 1, maxLength: 191, description: 'Username or email.' }),
  password: AnyText({ minLength: 1, maxLength: 4096 }),
});
export type LoginBody = Static<typeof LoginBodySchema>;

/** A login that is done: the session cookie comes with it. */
export const CompleteLoginSchema = Type.Object({
  data: Type.Object({
    complete: Type.Literal(true),
    intended: Type.String(),
    user: Type.Object({
      uuid: Type.String(),
      username: Type.String(),
      email: Type.String(),
      first_name: Type.String(),
      last_name: Type.String(),
      language: Type.String(),
      root_admin: Type.Boolean(),
    }),
  }),
});
export type CompleteLogin = Static<typeof CompleteLoginSchema>;

/** A login whose password was right and whose second factor is still to come (no cookie yet). */
export const PendingLoginSchema = Type.Object({
  data: Type.Object({
    complete: Type.Literal(false),
    confirmation_token: Type.String({
      description: 'Give it to POST /auth/login/checkpoint within 5 minutes, with a code.',
    }),
  }),
});
export type PendingLogin = Static<typeof PendingLoginSchema>;

export const LoginResponseSchema = Type.Union([CompleteLoginSchema, PendingLoginSchema]);
export type LoginResponse = Static<typeof LoginResponseSchema>;

export const LoginCheckpointBodySchema = Type.Object({
  confirmation_token: SingleLineText({ minLength: 1, maxLength: 255 }),
  authentication_code: Type.Optional(
    Type.Union(
      [SingleLineText({ maxLength: 16 }), Type.Integer({ minimum: 0, maximum: 999999 }), Type.Null()],
      {
        'x-rule': 'numeric',
        'x-message': 'The :field field must be the 6-digit code from an authenticator app.',
        description: 'The code the authenticator app shows; or give recovery_token instead.',
      },
    ),
  ),
  recovery_token: Type.Optional(
    Type.Union([SingleLineText({ maxLength: 255 }), Type.Null()], {
      'x-rule': 'string',
      'x-message': 'The :field field must be a string of at most 255 characters, without control characters.',
      description: 'One of the recovery tokens, instead of a code; each works once.',
    }),
  ),
});
export type LoginCheckpointBody = Static<typeof LoginCheckpointBodySchema>;

import { Type, type Static } from '@sinclair/typebox';

export const LoginBodySchema = Type.Object({
  user: Type.String({ minLength: 1, maxLength: 191, description: 'Username or email.' }),
  password: Type.String({ minLength: 1, maxLength: 4096 }),
});
export type LoginBody = Static<typeof LoginBodySchema>;

export const LoginResponseSchema = Type.Object({
  data: Type.Object({
    complete: Type.Boolean(),
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
export type LoginResponse = Static<typeof LoginResponseSchema>;

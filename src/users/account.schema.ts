import { Type, type Static } from '@sinclair/typebox';
import { AnyText, SingleLineText } from '../shared/text.ts';

/** As long as a login's password may be, so that every password set can be logged in with. */
const PASSWORD_MAX = 4096;

export const UpdateEmailBodySchema = Type.Object({
  email: SingleLineText({ format: 'email', maxLength: 191, description: 'The new email address.' }),
  password: AnyText({ minLength: 1, maxLength: PASSWORD_MAX, description: 'The current password.' }),
});
export type UpdateEmailBody = Static<typeof UpdateEmailBodySchema>;

export const UpdatePasswordBodySchema = Type.Object({
  current_password: AnyText({ minLength: 1, maxLength: PASSWORD_MAX }),
  password: AnyText({ minLength: 8, maxLength: PASSWORD_MAX, description: 'The new password.' }),
  password_confirmation: Type.Optional(
    AnyText({ maxLength: PASSWORD_MAX, description: 'The new password again.' }),
  ),
});
export type UpdatePasswordBody = Static<typeof UpdatePasswordBodySchema>;

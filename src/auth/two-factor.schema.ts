import { Type, type Static } from '@sinclair/typebox';
import { AnyText, SingleLineText } from '../shared/text.ts';

export const TwoFactorSetupSchema = Type.Object({
  data: Type.Object({
    image_url_data: Type.String({ description: 'The otpauth:// URI for authenticator apps.' }),
    secret: Type.String({ description: 'The TOTP secret in base32, for entering by hand.' }),
    qr_code: Type.String({ description: 'A QR code of image_url_data: an SVG image as a data: URI.' }),
  }),
});
export type TwoFactorSetupResource = Static<typeof TwoFactorSetupSchema>;

export const EnableTwoFactorBodySchema = Type.Object({
  code: SingleLineText({
    minLength: 6,
    maxLength: 6,
    description: 'The code the authenticator app shows now.',
  }),
  password: AnyText({ minLength: 1, maxLength: 4096 }),
});
export type EnableTwoFactorBody = Static<typeof EnableTwoFactorBodySchema>;

export const RecoveryTokensSchema = Type.Object({
  object: Type.Literal('recovery_tokens'),
  attributes: Type.Object({
    tokens: Type.Array(Type.String(), { description: 'Ten single-use recovery tokens, shown once.' }),
  }),
});

export const DisableTwoFactorBodySchema = Type.Object({
  password: AnyText({ minLength: 1, maxLength: 4096 }),
});
export type DisableTwoFactorBody = Static<typeof DisableTwoFactorBodySchema>;

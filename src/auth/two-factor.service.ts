import type { ActivityService } from '../activity/activity.service.ts';
import type { Executor, Transactor } from '../db/executor.ts';
import { BadRequestError, ConflictError } from '../shared/errors.ts';
import { randomAlphanumeric } from '../shared/random.ts';
import { toStoredTime, type Clock } from '../shared/time.ts';
import type { RequestContext } from '../shared/context.ts';
import type { Actor, AuthenticatedContext } from '../users/actor.ts';
import { hashPassword, verifyPassword } from '../users/password.ts';
import type { UserRepository } from '../users/user.repository.ts';
import type { UserRow } from '../users/user.table.ts';
import type { LoginCheckpointRepository } from './login-checkpoint.repository.ts';
import type { PasswordCheck } from './password-check.ts';
import type { RecoveryTokenRepository } from './recovery-token.repository.ts';
import type { SecretBox } from './secret-box.ts';
import { base32Encode, matchTotp, newTotpSecret } from './totp.ts';

/** The name authenticator apps show beside the account. */
const ISSUER = 'Aerie';
/**
 * How long a pending secret is handed out again: asking twice during a set-up (a second tab, a
 * reload, or a cross-site GET a browser lets through) gives the same secret, so the codes the
 * user's app already shows keep working. Long enough to scan a code and type one in.
 */
export const PENDING_SECRET_MINUTES = 15;
const RECOVERY_TOKENS = 10;
const RECOVERY_TOKEN_LENGTH = 10;

/** What a user needs to add the account to an authenticator app. */
export interface TwoFactorSetup {
  /** The otpauth:// URI the QR code holds. */
  uri: string;
  /** The secret in base32, for typing in by hand. */
  secret: string;
  /** The QR code of `uri`, an SVG image as a data: URI. */
  qrCode: string;
}

/** What proved a login's second factor: a TOTP code (its step), or one recovery token. */
export type SecondFactor = { kind: 'totp'; step: number } | { kind: 'recovery'; tokenId: number };

/**
 * What a login's second factor came to: what it proves; or `invalid`, nothing; or `used`, a TOTP
 * code right for the account whose step was already taken (that code, or a later one, was used).
 */
export type SecondFactorCheck = SecondFactor | 'invalid' | 'used';

export interface TwoFactorServiceDeps {
  users: UserRepository;
  recoveryTokens: RecoveryTokenRepository;
  checkpoints: LoginCheckpointRepository;
  passwords: PasswordCheck;
  secrets: SecretBox;
  activity: ActivityService;
  transaction: Transactor;
  clock: Clock;
}

const alreadyEnabled = () =>
  new BadRequestError('Two-factor authentication is already enabled on this account.');
const passwordNotValid = () => new BadRequestError('The password provided was not valid.');
const tokenNotValid = () =>
  new BadRequestError(
    'The provided two-factor authentication token was not valid.',
    'TwoFactorAuthenticationTokenInvalid',
  );

/** TOTP two-factor authentication (RFC 6238): setting it up, turning it off, checking it. */
export class TwoFactorService {
  constructor(private readonly deps: TwoFactorServiceDeps) {}

  /**
   * The pending secret, stored until a code of it turns 2FA on: the same one for
   * PENDING_SECRET_MINUTES after it was made, then a new one. Refused while 2FA is on.
   */
  async setUp(context: AuthenticatedContext): Promise<TwoFactorSetup> {
    const { user } = context.actor;
    if (user.useTotp) throw alreadyEnabled();
    const now = this.deps.clock();
    // Two tries: when a concurrent request stored a secret first, the second hands out that one.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const row = await this.deps.users.findById(user.id);
      if (row === undefined || row.totp_enabled_at !== null) throw alreadyEnabled();
      const pending = this.pendingSecret(row, now);
      if (pending !== null) return setupOf(row.email, pending);
      const secret = newTotpSecret();
      const expires = toStoredTime(new Date(now.getTime() + PENDING_SECRET_MINUTES * 60_000));
      const sealed = this.deps.secrets.seal(secret, user.id);
      if (await this.deps.users.setPendingTotpSecret(user.id, sealed, expires, row.totp_secret))
        return setupOf(row.email, secret);
    }
    throw new ConflictError('Two-factor authentication is being set up by another request; try again.');
  }

  /** The row's pending secret if it is still handed out (not expired, readable), else null. */
  private pendingSecret(row: UserRow, now: Date): Buffer | null {
    const expires = row.totp_pending_expires_at;
    if (row.totp_secret === null || expires === null || expires <= toStoredTime(now)) return null;
    return this.deps.secrets.open(row.totp_secret, row.id);
  }

  /**
   * Turns 2FA on, given the password and a code of the pending secret; returns the recovery
   * tokens, shown this once (only their hashes are kept).
   */
  async enable(context: AuthenticatedContext, body: { code: string; password: string }): Promise<string[]> {
    const { user } = context.actor;
    if (!(await this.deps.passwords.matches(context, user.id, body.password))) throw passwordNotValid();
    const row = await this.deps.users.findById(user.id);
    if (row === undefined || row.totp_enabled_at !== null) throw alreadyEnabled();
    const now = this.deps.clock();
    const pending = row.totp_secret;
    const secret = this.pendingSecret(row, now);
    if (pending === null || secret === null) {
      throw new BadRequestError(
        'Two-factor authentication has not been set up on this account: request a secret first.',
      );
    }
    const step = matchTotp(secret, body.code, now);
    if (step === null) throw tokenNotValid();

    const tokens = Array.from({ length: RECOVERY_TOKENS }, () => randomAlphanumeric(RECOVERY_TOKEN_LENGTH));
    const hashes = await Promise.all(tokens.map((token) => hashPassword(token)));
    await this.deps.transaction(async (trx) => {
      const stored = toStoredTime(now);
      // The pending secret must still be the one the code was checked against.
      if (!(await this.deps.users.enableTotp(user.id, pending, step, stored, trx))) throw tokenNotValid();
      await this.deps.recoveryTokens.replaceForUser(user.id, hashes, stored, trx);
      await this.deps.activity.record(
        context,
        { event: 'user:two-factor.create', actor: context.actor, subjects: [{ type: 'user', id: user.id }] },
        trx,
      );
    });
    return tokens;
  }

  /**
   * Turns 2FA off, given the password: the secret, the recovery tokens and any login waiting
   * for its second factor go. Without 2FA on, it only drops a pending secret.
   */
  async disable(context: AuthenticatedContext, body: { password: string }): Promise<void> {
    const { user } = context.actor;
    if (!(await this.deps.passwords.matches(context, user.id, body.password))) throw passwordNotValid();
    await this.turnOff(context, user.id, context.actor);
  }

  /**
   * Turns 2FA off for a user who has lost both their device and their recovery tokens, on the
   * word of whoever runs Aerie (`aerie user disable-2fa`): no password is asked, and the
   * activity log records it with no actor. False when 2FA was not on.
   */
  async disableByOperator(context: RequestContext, userId: string): Promise<boolean> {
    return this.turnOff(context, userId, null);
  }

  private async turnOff(context: RequestContext, userId: string, actor: Actor | null): Promise<boolean> {
    return this.deps.transaction(async (trx) => {
      await this.deps.users.lock(userId, trx);
      const row = await this.deps.users.findById(userId, trx);
      if (row === undefined) return false;
      await this.deps.users.disableTotp(userId, toStoredTime(this.deps.clock()), trx);
      await this.deps.recoveryTokens.deleteForUser(userId, trx);
      await this.deps.checkpoints.deleteForUser(userId, trx);
      if (row.totp_enabled_at === null) return false;
      await this.deps.activity.record(
        context,
        { event: 'user:two-factor.delete', actor, subjects: [{ type: 'user', id: userId }] },
        trx,
      );
      return true;
    });
  }

  /**
   * What a login's second factor proves, if anything: a TOTP code of the user's secret (the
   * current step or one either side), or one of their recovery tokens. A code of a step already
   * taken is `used`, and only once it is known to be right for the account: a wrong code is
   * `invalid` whatever was used before. Nothing is used up here: `consume` does that, in the
   * transaction that starts the session.
   */
  async check(
    row: UserRow,
    proof: { code: string } | { recoveryToken: string },
    time: Date,
  ): Promise<SecondFactorCheck> {
    if (row.totp_enabled_at === null || row.totp_secret === null) return 'invalid';
    if ('code' in proof) {
      const secret = this.deps.secrets.open(row.totp_secret, row.id);
      const step = secret === null ? null : matchTotp(secret, proof.code, time);
      if (step === null) return 'invalid';
      const last = row.totp_last_step;
      return last !== null && step <= last ? 'used' : { kind: 'totp', step };
    }
    const given = proof.recoveryToken.trim();
    const tokens = await this.deps.recoveryTokens.listForUser(row.id);
    const matches = await Promise.all(tokens.map((token) => verifyPassword(given, token.token_hash)));
    const index = matches.indexOf(true);
    return index < 0 ? 'invalid' : { kind: 'recovery', tokenId: tokens[index]!.id };
  }

  /**
   * Uses up a second factor: the code's step (no code of it or an earlier step works again), or
   * the recovery token. False when it was used meanwhile.
   */
  consume(userId: string, factor: SecondFactor, db: Executor): Promise<boolean> {
    return factor.kind === 'totp'
      ? this.deps.users.advanceTotpStep(userId, factor.step, db)
      : this.deps.recoveryTokens.use(factor.tokenId, userId, db);
  }
}

/** What an authenticator app needs of `secret`, for the account of `email`. */
async function setupOf(email: string, secret: Buffer): Promise<TwoFactorSetup> {
  const encoded = base32Encode(secret);
  const issuer = encodeURIComponent(ISSUER);
  const uri = `otpauth://totp/${issuer}:${encodeURIComponent(email)}?secret=${encoded}&issuer=${issuer}`;
  return { uri, secret: encoded, qrCode: await qrCodeSvg(uri) };
}

/** The QR code as an SVG data: URI (the library is loaded when first needed). */
async function qrCodeSvg(text: string): Promise<string> {
  const { default: qrcode } = await import('qrcode');
  const svg = await qrcode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
}

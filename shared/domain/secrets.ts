import crypto, { createHash, randomBytes, randomInt } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** 48 characters of a 62-letter alphabet: about 285 bits from the CSPRNG. */
const RANDOM_LENGTH = 48;

export const secretPrefixes = {
  personalAccessToken: 'polar_pat_',
  customerSession: 'polar_cst_',
  clientId: 'polar_ci_',
  clientSecret: 'polar_cs_',
  registrationAccessToken: 'polar_crt_',
  authorizationCode: 'polar_ac_',
  /** OAuth access tokens: acting for a user, or for one organization. */
  userAccessToken: 'polar_at_u_',
  organizationAccessToken: 'polar_at_o_',
  userRefreshToken: 'polar_rt_u_',
  organizationRefreshToken: 'polar_rt_o_',
} as const;

/** Bytes of a webhook signing secret: 256 bits, inside the Standard Webhooks range (24 to 64). */
export const WEBHOOK_SECRET_BYTES = 32;

/**
 * A webhook signing secret in the Standard Webhooks form, `whsec_` + base64 of random bytes, so that
 * stock verifiers and both SDK lines accept it (`shared/domain/webhook-signature.ts`).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`;
}

/**
 * What a credential without `webhooks:write` reads in place of an endpoint's signing secret: the
 * `whsec_` shape both SDK lines parse, as long as a real one, and no key at all (`*` is in no base64
 * alphabet). A receiver must never be configured with it.
 */
export const WEBHOOK_SECRET_PLACEHOLDER = `whsec_${'*'.repeat(44)}`;

export function generateSecret(prefix: string): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(ALPHABET.length)];
  return prefix + random;
}

// One-shot `crypto.hash` (Node 20.12+, 21.7+) is ~2.5× faster than a Hash object for short input,
// and authentication hashes the bearer token on every request; older Node falls back.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** Secrets are stored and looked up only by this hash (SHA-256 of the UTF-8 text, hex). */
export const hashSecret: (secret: string) => string = oneShot
  ? (secret) => oneShot('sha256', secret, 'hex')
  : (secret) => createHash('sha256').update(secret, 'utf8').digest('hex');

/** A shape check before any lookup: prefix plus a plausible random part. */
export function hasSecretShape(value: string, prefix: string): boolean {
  if (!value.startsWith(prefix)) return false;
  const random = value.slice(prefix.length);
  return random.length >= 32 && random.length <= 128 && /^[A-Za-z0-9_-]+$/.test(random);
}

/**
 * An OAuth access token names its client and its user after the random part (`<prefix><random>_<client
 * id's random part>_<user id>`), so that authentication reads the token, its client's liveness and
 * its user's organizations in one round trip. Neither id is a secret; the hash covers the whole token.
 */
export function accessTokenFor(prefix: string, clientId: string, userId: string): string {
  return `${generateSecret(prefix)}_${clientId.slice(secretPrefixes.clientId.length)}_${userId}`;
}

const USER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The client and user an access token names, when the token has the shape `accessTokenFor` gives
 * (`userId` undefined for a token of the earlier shape without it, which no issued token has).
 */
export function accessTokenParts(
  token: string,
  prefix: string,
): { clientId: string; userId: string | undefined } | undefined {
  if (!token.startsWith(prefix)) return undefined;
  const [random, client, user, ...rest] = token.slice(prefix.length).split('_');
  if (rest.length > 0 || !random || !client) return undefined;
  if (user !== undefined && !USER_ID.test(user)) return undefined;
  const clientId = `${secretPrefixes.clientId}${client}`;
  return hasSecretShape(random, '') && hasSecretShape(clientId, secretPrefixes.clientId)
    ? { clientId, userId: user }
    : undefined;
}

/** The client id an access token names, when the token has the shape `accessTokenFor` gives. */
export function clientIdOfAccessToken(token: string, prefix: string): string | undefined {
  return accessTokenParts(token, prefix)?.clientId;
}

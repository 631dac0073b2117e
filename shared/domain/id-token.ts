/**
 * ID Tokens (OpenID Connect Core 1.0 §2, §3.1.3.6): a JWS in compact serialisation, signed RS256 (the
 * algorithm every OpenID provider must support, §15.1) with a key the server manages. Deployed, the
 * key is a KMS asymmetric key whose private half never leaves KMS (`shared/oauth/kms-keys.ts`);
 * locally, an RSA key made in process (`localIdTokenKeys`). Either way the server holds no private
 * key material it could log, answer or store.
 */
import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';

export const ID_TOKEN_ALGORITHM = 'RS256';

/** One public key of the JWKS (RFC 7517), with the `kid` ID Tokens name it by. */
export interface PublicJwk {
  kty: 'RSA';
  n: string;
  e: string;
  kid: string;
  use: 'sig';
  alg: typeof ID_TOKEN_ALGORITHM;
}

/** The keys of ID Tokens: one signs, the JWKS publishes it and any key still being retired. */
export interface IdTokenKeys {
  /** The `kid` of the signing key, written in the header before signing. */
  signingKeyId(): string;
  /** RSASSA-PKCS1-v1_5 with SHA-256 over the JWS signing input. */
  sign(signingInput: Buffer): Promise<Buffer>;
  /** The JWKS document: the signing key's public half first, then keys being retired. */
  jwks(): Promise<{ keys: PublicJwk[] }>;
}

/** An RSA public key (a KeyObject or DER SPKI) as the JWKS publishes it. */
export function publicJwk(key: KeyObject | Buffer, kid: string): PublicJwk {
  const object = Buffer.isBuffer(key) ? createPublicKey({ key, format: 'der', type: 'spki' }) : key;
  const jwk = object.export({ format: 'jwk' }) as { kty: string; n?: string; e?: string };
  if (jwk.kty !== 'RSA' || !jwk.n || !jwk.e) throw new Error(`ID Token key ${kid} is not an RSA key`);
  return { kty: 'RSA', n: jwk.n, e: jwk.e, kid, use: 'sig', alg: ID_TOKEN_ALGORITHM };
}

/** RFC 7638 JWK thumbprint: a `kid` derived from the public key alone. */
export function thumbprint(jwk: Pick<PublicJwk, 'e' | 'n'>): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: 'RSA', n: jwk.n }))
    .digest('base64url');
}

/**
 * Keys made in process: `npm start` and the tests (which may pass the private key, to look for it
 * where it must never be). A new key per process, so ID Tokens from a previous run no longer
 * verify, as after a deployed key's retirement.
 */
export function localIdTokenKeys(
  privateKey: KeyObject = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
): IdTokenKeys {
  const jwk = publicJwk(createPublicKey(privateKey), '');
  const kid = `local-${thumbprint(jwk).slice(0, 16)}`;
  const published = { ...jwk, kid };
  return {
    signingKeyId: () => kid,
    sign: async (input) => sign('sha256', input, privateKey),
    jwks: async () => ({ keys: [published] }),
  };
}

/**
 * `at_hash` (Core §3.1.3.6): the left half of the SHA-256 of the access token's ASCII octets,
 * base64url: binds the access token answered with the ID Token to it.
 */
export const accessTokenHash = (accessToken: string): string =>
  createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');

/** The claims of an ID Token this server issues. */
export interface IdTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  auth_time: number;
  nonce?: string;
  at_hash: string;
  azp: string;
}

const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Signs the claims: `<header>.<claims>.<signature>`, the header naming the algorithm and the key. */
export async function signIdToken(keys: IdTokenKeys, claims: IdTokenClaims): Promise<string> {
  const header = { alg: ID_TOKEN_ALGORITHM, typ: 'JWT', kid: keys.signingKeyId() };
  const input = `${part(header)}.${part(claims)}`;
  const signature = await keys.sign(Buffer.from(input, 'ascii'));
  return `${input}.${signature.toString('base64url')}`;
}

/**
 * OAuth client authentication (RFC 6749 §2.3) at the token, revocation and introspection
 * endpoints: HTTP Basic (`client_secret_basic`), the secret in the form (`client_secret_post`), or a
 * public client naming itself (`none`). A client may use only the method it registered. Every
 * failure is the same 401 `invalid_client` with a Basic challenge; the secret is compared by its
 * SHA-256 in constant time, and a secret or id of the wrong shape is refused before any read.
 */
import { timingSafeEqual } from 'node:crypto';
import { findOAuthClient } from '../data/oauth-clients.ts';
import { InvalidClient, OAuthError } from '../domain/errors.ts';
import type { ClientAuthMethod } from '../domain/oauth.ts';
import type { ClientPrincipal } from '../domain/principals.ts';
import { hashSecret, hasSecretShape, secretPrefixes } from '../domain/secrets.ts';
import type { Dependencies } from '../runtime.ts';

interface Presented {
  method: ClientAuthMethod;
  clientId: string;
  secret?: string;
}

/** `Basic base64(urlencoded(id) ":" urlencoded(secret))` (RFC 6749 §2.3.1). */
function basicCredentials(authorization: string): { clientId: string; secret: string } {
  const encoded = /^\s*Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(authorization)?.[1];
  if (!encoded) throw new InvalidClient('The Authorization header is not HTTP Basic client authentication.');
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) throw new InvalidClient('HTTP Basic credentials need a client id and a secret.');
  try {
    const form = (part: string) => decodeURIComponent(part.replaceAll('+', ' '));
    return { clientId: form(decoded.slice(0, colon)), secret: form(decoded.slice(colon + 1)) };
  } catch {
    throw new InvalidClient('HTTP Basic credentials are not form-encoded.');
  }
}

/** Which method the request used, and its credentials; more than one method is a malformed request. */
function presented(authorization: string | undefined, form: Record<string, unknown>): Presented {
  const bodyId = typeof form.client_id === 'string' ? form.client_id : undefined;
  const bodySecret = typeof form.client_secret === 'string' ? form.client_secret : undefined;
  if (authorization !== undefined && authorization.trim() !== '') {
    const { clientId, secret } = basicCredentials(authorization);
    if (bodySecret !== undefined) {
      throw new OAuthError(
        'invalid_request',
        'Authenticate with one method: HTTP Basic or the form, not both.',
      );
    }
    if (bodyId !== undefined && bodyId !== clientId) {
      throw new OAuthError('invalid_request', 'client_id differs from the HTTP Basic client id.');
    }
    return { method: 'client_secret_basic', clientId, secret };
  }
  if (bodyId === undefined) throw new InvalidClient('Client authentication is required.');
  return bodySecret === undefined
    ? { method: 'none', clientId: bodyId }
    : { method: 'client_secret_post', clientId: bodyId, secret: bodySecret };
}

const sameHash = (a: string, b: string): boolean => {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
};

export async function authenticateClient(
  deps: Dependencies,
  authorization: string | undefined,
  form: Record<string, unknown>,
  accepted: readonly ClientAuthMethod[],
): Promise<ClientPrincipal> {
  const { method, clientId, secret } = presented(authorization, form);
  if (!hasSecretShape(clientId, secretPrefixes.clientId)) throw new InvalidClient();
  if (secret !== undefined && !hasSecretShape(secret, secretPrefixes.clientSecret)) throw new InvalidClient();
  const client = await findOAuthClient(deps.table, clientId);
  if (!client || client.deleted_at !== null) throw new InvalidClient();
  const registered = client.registration.token_endpoint_auth_method as ClientAuthMethod;
  if (method !== registered) {
    throw new InvalidClient(`This client authenticates with ${registered}.`);
  }
  if (
    secret !== undefined &&
    !(client.client_secret_hash && sameHash(hashSecret(secret), client.client_secret_hash))
  ) {
    throw new InvalidClient();
  }
  if (!accepted.includes(method)) {
    throw new InvalidClient(`This endpoint does not accept ${method} client authentication.`);
  }
  return { kind: 'oauth_client', clientId, client, method };
}

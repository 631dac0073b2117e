/**
 * RFC 7592 client configuration: read, replace and delete a registration with its registration
 * access token. Authentication (shared/http/auth.ts) has already matched the token to the client
 * the path names, so a principal here is that client's registrant.
 */

import { timingSafeEqual } from 'node:crypto';
import type { OperationAccess } from '../data/grants.ts';
import {
  deleteOAuthClient,
  access as oauthClientsAccess,
  replaceOAuthClientRegistration,
} from '../data/oauth-clients.ts';
import { InvalidClientMetadata } from '../domain/errors.ts';
import type { RegisteredClient, RegistrationPrincipal } from '../domain/principals.ts';
import { hashSecret } from '../domain/secrets.ts';
import type { OAuth2ClientInformation, UpdateClientBody } from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { registrationClientUri, registrationOf } from './create-client.ts';

/** Fields only the server sets (RFC 7592 §2.2): a client must not send them. */
const SERVER_FIELDS = [
  'registration_access_token',
  'registration_client_uri',
  'client_id_issued_at',
  'client_secret_expires_at',
] as const;

function information(client: RegisteredClient, baseUrl: string): OAuth2ClientInformation {
  return {
    ...client.registration,
    client_id: client.client_id,
    client_id_issued_at: client.client_id_issued_at,
    ...(client.client_secret_hash ? { client_secret_expires_at: client.client_secret_expires_at } : {}),
    registration_client_uri: registrationClientUri(baseUrl, client.client_id),
  } as OAuth2ClientInformation;
}

export function getClient(
  principal: RegistrationPrincipal,
  { baseUrl }: { baseUrl: string },
): OAuth2ClientInformation {
  return information(principal.client, baseUrl);
}

const sameSecret = (secret: string, hash: string): boolean => {
  const given = Buffer.from(hashSecret(secret), 'utf8');
  const stored = Buffer.from(hash, 'utf8');
  return given.length === stored.length && timingSafeEqual(given, stored);
};

/**
 * Replaces the client's metadata with the body (RFC 7592 §2.2: what is left out takes its default or
 * is removed), checked exactly as a registration is. The registration token is not rotated.
 */
export async function updateClient(
  deps: Dependencies,
  principal: RegistrationPrincipal,
  body: UpdateClientBody,
  { baseUrl }: { baseUrl: string },
): Promise<OAuth2ClientInformation> {
  const { client } = principal;
  if (body.client_id !== client.client_id) {
    throw new InvalidClientMetadata('invalid_request', 'client_id does not match the registration.');
  }
  const sent = SERVER_FIELDS.filter((field) => body[field] !== undefined);
  if (sent.length > 0) {
    throw new InvalidClientMetadata(
      'invalid_request',
      `The server sets ${sent.join(', ')}: do not send them.`,
    );
  }
  if (
    body.client_secret !== undefined &&
    !(client.client_secret_hash && sameSecret(body.client_secret, client.client_secret_hash))
  ) {
    throw new InvalidClientMetadata('invalid_request', 'client_secret does not match the registration.');
  }
  const {
    client_id: _clientId,
    client_secret: _secret,
    registration_access_token: _token,
    registration_client_uri: _uri,
    client_id_issued_at: _issued,
    client_secret_expires_at: _expires,
    ...metadata
  } = body;
  const registration = registrationOf(metadata);
  const wasPublic = client.client_secret_hash === null;
  if ((registration.token_endpoint_auth_method === 'none') !== wasPublic) {
    throw new InvalidClientMetadata(
      'invalid_client_metadata',
      `A ${wasPublic ? 'public' : 'confidential'} client cannot become ${wasPublic ? 'confidential' : 'public'}: register a new client.`,
    );
  }
  await replaceOAuthClientRegistration(
    deps.table,
    client.client_id,
    principal.tokenHash,
    registration,
    deps.now().toISOString(),
  );
  return information({ ...client, registration }, baseUrl);
}

export async function deleteClient(deps: Dependencies, principal: RegistrationPrincipal): Promise<void> {
  await deleteOAuthClient(deps.table, principal.client, principal.tokenHash, deps.now().toISOString());
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  getClient: {
    table: [
      // RFC 7592: the registration token is checked against the client item itself, so the one read
      // is the client (strongly consistent); no token item, no other partition.
      ...oauthClientsAccess.findOAuthClient,
    ],
  },
  updateClient: {
    table: [...oauthClientsAccess.replaceOAuthClientRegistration],
  },
  deleteClient: {
    table: [...oauthClientsAccess.deleteOAuthClient],
  },
});

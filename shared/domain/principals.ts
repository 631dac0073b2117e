/**
 * Who is calling, once authentication has read their token: a user (personal access token, acting
 * for the organizations they belong to) or a customer (customer session, one customer of one
 * organization). Services take these; how a token becomes one is `shared/http/auth.ts`.
 */
import type { ClientAuthMethod, SubType } from './oauth.ts';

export type CredentialKind =
  | 'personal_access_token'
  | 'customer_session'
  | 'registration_access_token'
  /** OAuth client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3). */
  | 'oauth_client';

/** The credentials sent as a bearer token. */
export type BearerCredential = Exclude<CredentialKind, 'oauth_client'>;

export interface UserPrincipal {
  kind: 'user';
  userId: string;
  tokenId: string;
  organizationIds: string[];
  scopes: ReadonlySet<string>;
  /**
   * Set when the credential is an OAuth access token: the client it was issued to, and whom it acts
   * for (the user; or `organization`, the one organization of `organizationIds`).
   */
  oauth?: { clientId: string; subType: SubType };
}

export interface CustomerPrincipal {
  kind: 'customer';
  customerId: string;
  organizationId: string;
  tokenId: string;
  scopes: ReadonlySet<string>;
}

/**
 * The holder of an OAuth client's registration access token (RFC 7592): it may read, replace and
 * delete that one registration, nothing else.
 */
export interface RegistrationPrincipal {
  kind: 'client_registration';
  clientId: string;
  client: RegisteredClient;
  /** The hash of the token that authenticated the request: writes re-check that it is still the client's. */
  tokenHash: string;
}

/** An OAuth client as stored: RFC 7591 metadata, credentials as hashes, lifecycle. */
export interface RegisteredClient {
  client_id: string;
  /** SHA-256 of the client secret; null for public clients. */
  client_secret_hash: string | null;
  /** SHA-256 of the registration access token; null once the client is deleted. */
  registration_token_hash: string | null;
  client_id_issued_at: number;
  client_secret_expires_at: number;
  registration: Record<string, unknown>;
  created_by_user_id: string;
  created_at: string;
  modified_at: string | null;
  deleted_at: string | null;
}

/** A registered OAuth client, authenticated by the method it registered (RFC 6749 §2.3). */
export interface ClientPrincipal {
  kind: 'oauth_client';
  clientId: string;
  client: RegisteredClient;
  method: ClientAuthMethod;
}

export type Principal = UserPrincipal | CustomerPrincipal | RegistrationPrincipal | ClientPrincipal;

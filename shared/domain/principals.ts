/**
 * Who is calling, once authentication has read their token: a user (personal access token, acting
 * for the organizations they belong to) or a customer (customer session, one customer of one
 * organization). Services take these; how a token becomes one is `shared/http/auth.ts`.
 */

export type CredentialKind = 'personal_access_token' | 'customer_session';

export interface UserPrincipal {
  kind: 'user';
  userId: string;
  tokenId: string;
  organizationIds: string[];
  scopes: ReadonlySet<string>;
}

export interface CustomerPrincipal {
  kind: 'customer';
  customerId: string;
  organizationId: string;
  tokenId: string;
  scopes: ReadonlySet<string>;
}

export type Principal = UserPrincipal | CustomerPrincipal;

/**
 * Production wiring: environment read once, one client per container, created
 * at module scope by each handler. Missing configuration fails the cold start
 * loudly instead of failing every request.
 */
import { createDocumentClient, type Table } from './data/dynamo.ts';
import type { IdTokenKeys } from './domain/id-token.ts';
import { IssuerNotConfigured, parseIssuer } from './domain/issuer.ts';
import { type Keyring, noKeyring } from './domain/keyring.ts';
import { DEFAULT_QUOTAS } from './domain/limits.ts';
import { ISSUER_ENV, TABLE_NAME_ENV } from './env.ts';
import { QuotaKeeper } from './http/quota.ts';
import { type AddressPolicy, DEPLOYED_ADDRESS_POLICY } from './webhooks/address-policy.ts';

export interface WebhookSettings {
  /** The key set sealing webhook signing secrets; only the functions that need it are given one. */
  keyring: Keyring;
  /** Where endpoint URLs may point. Deployed: public addresses only; `npm start` also allows loopback. */
  addresses: AddressPolicy;
}

export interface Dependencies {
  table: Table;
  now: () => Date;
  webhooks: WebhookSettings;
  /** The issuer, the API's base URL (`shared/domain/issuer.ts`); read through `issuerOf`. */
  issuer?: string;
  /**
   * The request quotas this function instance enforces (shared/http/quota.ts): deployed and
   * `npm start` always; test worlds only where a test gives one.
   */
  quotas?: QuotaKeeper;
  /**
   * The keys that sign ID Tokens and that the JWKS publishes: given only to the functions that use
   * them (the token endpoint, discovery); deployed, a KMS key (`shared/oauth/kms-keys.ts`).
   */
  idTokenKeys?: IdTokenKeys;
}

/** The configured issuer; a function without one fails every request that needs it, loudly (500, logged). */
export function issuerOf(deps: Pick<Dependencies, 'issuer'>): string {
  if (!deps.issuer) throw new IssuerNotConfigured(ISSUER_ENV);
  return deps.issuer;
}

/** The issuer from the environment, checked; undefined when the stack gave the function none. */
export function issuerFromEnv(value = process.env[ISSUER_ENV]): string | undefined {
  return value ? parseIssuer(value) : undefined;
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Missing required environment variable ${name}`);
  return value;
}

/** The deployed settings: no key set (see `shared/webhooks/runtime.ts`), no loopback, whatever the environment says. */
export const DEPLOYED_WEBHOOK_SETTINGS: WebhookSettings = Object.freeze({
  keyring: noKeyring,
  addresses: DEPLOYED_ADDRESS_POLICY,
});

export function productionDependencies(): Dependencies {
  const table = { doc: createDocumentClient(), name: requireEnv(TABLE_NAME_ENV) };
  return {
    table,
    now: () => new Date(),
    webhooks: DEPLOYED_WEBHOOK_SETTINGS,
    quotas: new QuotaKeeper(table, DEFAULT_QUOTAS),
    ...optionalIssuer(),
  };
}

/** `{ issuer }` when the environment names one (every HTTP function's does: infra/stack.ts). */
export function optionalIssuer(): { issuer?: string } {
  const issuer = issuerFromEnv();
  return issuer ? { issuer } : {};
}

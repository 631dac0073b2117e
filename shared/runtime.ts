/**
 * Production wiring: environment read once, one client per container, created
 * at module scope by each handler. Missing configuration fails the cold start
 * loudly instead of failing every request.
 */
import { createDocumentClient, type Table } from './data/dynamo.ts';
import { type Keyring, noKeyring } from './domain/keyring.ts';
import { TABLE_NAME_ENV } from './env.ts';
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
  return {
    table: { doc: createDocumentClient(), name: requireEnv(TABLE_NAME_ENV) },
    now: () => new Date(),
    webhooks: DEPLOYED_WEBHOOK_SETTINGS,
  };
}

/**
 * Production wiring of the functions that seal or open webhook signing secrets (the endpoint API and
 * the pipeline's deliverer): the usual dependencies plus the key set in Secrets Manager, named by the
 * secret name the stack passes only to them. Imported by those handlers alone, so no other bundle
 * carries the Secrets Manager client.
 */
import { secretsManagerKeyring } from '../data/webhook-keys.ts';
import { WEBHOOK_KEY_SET_ID_ENV } from '../env.ts';
import { type Dependencies, productionDependencies, requireEnv } from '../runtime.ts';

export function webhookKeyDependencies(): Dependencies {
  const deps = productionDependencies();
  return {
    ...deps,
    webhooks: { ...deps.webhooks, keyring: secretsManagerKeyring(requireEnv(WEBHOOK_KEY_SET_ID_ENV)) },
  };
}

/**
 * The webhook key set on AWS: a Secrets Manager secret the stack generates (see `infra/stack.ts`),
 * read with one GetSecretValue the first time a container needs it, then kept for the container's
 * life. Nothing is read at cold start, and a request that never opens or seals a secret (a 401, a
 * 404, a refused body, a reader's Get) never reads it. AWS errors stop here: throttling, outages
 * and a store that cannot be reached (ECONNREFUSED and the like) are the contract's 503; anything
 * else (a missing grant, a deleted secret) is an operator's fault, a 500 whose log line names it.
 */
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { ServiceUnavailable } from '../domain/errors.ts';
import { type Keyring, type KeySet, parseKeySet, rotateKeySetDocument } from '../domain/keyring.ts';

const TRANSIENT = new Set([
  'ThrottlingException',
  'InternalServiceError',
  'TimeoutError',
  'RequestTimeout',
  'NetworkingError',
]);
/** The store out of reach (refused, reset, unresolvable, unreachable): an outage, not an operator's fault. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export function secretsManagerKeyring(secretId: string, client?: SecretsManagerClient): Keyring {
  let loading: Promise<KeySet> | undefined;
  const read = async (): Promise<KeySet> => {
    const secrets = client ?? new SecretsManagerClient({ maxAttempts: 3 });
    try {
      const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
      return parseKeySet(SecretString ?? '');
    } catch (error) {
      const { name, code, $metadata, $retryable } = error as {
        name?: string;
        code?: string;
        $metadata?: { httpStatusCode?: number };
        $retryable?: unknown;
      };
      const status = $metadata?.httpStatusCode;
      const transient = TRANSIENT.has(name ?? '') || NETWORK_CODES.has(code ?? '') || $retryable;
      if (transient || (status !== undefined && status >= 500)) {
        throw new ServiceUnavailable();
      }
      throw error;
    }
  };
  let refreshing: Promise<KeySet> | undefined;
  return (fresh) => {
    if (fresh) {
      // One read again for every request that met a version this container had not loaded.
      refreshing ??= read()
        .then((keySet) => {
          loading = Promise.resolve(keySet);
          return keySet;
        })
        .finally(() => {
          refreshing = undefined;
        });
      return refreshing;
    }
    // A failed read is not kept: the next request tries again.
    loading ??= read().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

/**
 * The operator's rotation (`npm run admin -- webhook rotate-keys`): a new version added to the key
 * set and made current, written as the secret's new value (Secrets Manager seals it with the stack's
 * KMS key; the operator needs `secretsmanager:GetSecretValue`/`PutSecretValue` on it and
 * `kms:Decrypt`/`kms:GenerateDataKey` on the key). Older versions stay, so every stored secret still
 * opens; `resealWebhookSecrets` then moves them to the new one. Returns the new current version.
 */
export async function rotateStoredKeySet(secretId: string, client: SecretsManagerClient): Promise<string> {
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
  const rotated = rotateKeySetDocument(SecretString ?? '');
  const { current } = parseKeySet(rotated);
  await client.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: rotated }));
  return current;
}

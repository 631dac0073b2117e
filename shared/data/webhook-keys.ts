/**
 * The webhook key set on AWS: a Secrets Manager secret the stack generates (see `infra/stack.ts`),
 * read with one GetSecretValue the first time a container needs it, then kept for the container's
 * life. Nothing is read at cold start, and a request that never opens or seals a secret (a 401, a
 * 404, a refused body, a reader's Get) never reads it. AWS errors stop here: throttling, outages and
 * a store that cannot be reached (ECONNREFUSED and the like) are the contract's 503; anything else (a missing grant, a deleted secret) is an operator's fault, a 500
 * whose log line names it.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ServiceUnavailable } from '../domain/errors.ts';
import { type Keyring, type KeySet, parseKeySet } from '../domain/keyring.ts';

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
  return () => {
    // A failed read is not kept: the next request tries again.
    loading ??= read().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

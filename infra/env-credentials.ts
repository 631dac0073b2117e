/**
 * Bundled into every function in place of `@aws-sdk/credential-provider-node` (an esbuild alias in
 * `bundlingOptions`, infra/function.ts). Lambda hands a function its role's credentials in
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, and the SDK's default chain
 * starts with exactly those variables (`fromEnv`), so on Lambda the rest of the chain (shared
 * config files, SSO, web identity, the container and instance metadata endpoints, with the STS and
 * SSO clients they embed) never runs: it only cost 135 kB of bundle and ~25 ms of every cold start
 * (test/bench). `sam local` passes credentials the same way. Only the bundles use this; `npm start`
 * and the tests load the real chain from node_modules.
 */

/** The SDK's `AwsCredentialIdentity`. */
export interface EnvironmentCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
  credentialScope?: string;
  accountId?: string;
}

export class MissingEnvironmentCredentials extends Error {
  override name = 'CredentialsProviderError';
  constructor() {
    super(
      'No AWS credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): this bundle reads ' +
        'only the variables Lambda sets for the execution role (see infra/env-credentials.ts)',
    );
  }
}

/** Same contract and same variables as `fromEnv` of `@aws-sdk/credential-provider-env`. */
export function defaultProvider(_init?: unknown): () => Promise<EnvironmentCredentials> {
  return async () => {
    const env = process.env;
    const accessKeyId = env.AWS_ACCESS_KEY_ID;
    const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
    if (!accessKeyId || !secretAccessKey) throw new MissingEnvironmentCredentials();
    const sessionToken = env.AWS_SESSION_TOKEN;
    const expiration = env.AWS_CREDENTIAL_EXPIRATION;
    const credentialScope = env.AWS_CREDENTIAL_SCOPE;
    const accountId = env.AWS_ACCOUNT_ID;
    return {
      accessKeyId,
      secretAccessKey,
      ...(sessionToken ? { sessionToken } : {}),
      ...(expiration ? { expiration: new Date(expiration) } : {}),
      ...(credentialScope ? { credentialScope } : {}),
      ...(accountId ? { accountId } : {}),
    };
  };
}

/**
 * The deployed ID Token keys: KMS asymmetric keys (RSA_2048, SIGN_VERIFY). The token endpoint signs
 * with `kms:Sign` on the current key alone (`ID_TOKEN_SIGNING_KEY_ARN`); the discovery function
 * publishes the JWKS from `kms:GetPublicKey` on the keys of `ID_TOKEN_PUBLISHED_KEY_ARNS` (the
 * current one first, then the one being retired), read once per container. The private keys never
 * leave KMS. A key's `kid` is its KMS key id (the UUID at the end of its ARN).
 *
 * Imported only by the two functions that use it, so no other bundle carries the KMS client.
 */
import { GetPublicKeyCommand, KMSClient, SignCommand } from '@aws-sdk/client-kms';
import { type IdTokenKeys, type PublicJwk, publicJwk } from '../domain/id-token.ts';
import { ID_TOKEN_PUBLISHED_KEYS_ENV, ID_TOKEN_SIGNING_KEY_ENV } from '../env.ts';

/** `arn:aws:kms:<region>:<account>:key/<key id>` → the key id. */
export function keyIdOfArn(arn: string): string {
  const match = /^arn:aws[\w-]*:kms:[\w-]+:\d{12}:key\/([\w-]+)$/.exec(arn);
  if (!match?.[1]) throw new Error(`not a KMS key ARN: ${arn}`);
  return match[1];
}

export interface KmsIdTokenKeysOptions {
  signingKeyArn?: string | undefined;
  publishedKeyArns?: readonly string[];
  /** Default: a client for the function's region, created on first use. */
  client?: Pick<KMSClient, 'send'>;
}

export function kmsIdTokenKeys(options: KmsIdTokenKeysOptions): IdTokenKeys {
  let client = options.client;
  const kms = () => {
    client ??= new KMSClient({ maxAttempts: 2 });
    return client;
  };
  const signingArn = () => {
    if (!options.signingKeyArn) throw new Error(`${ID_TOKEN_SIGNING_KEY_ENV} is not configured`);
    return options.signingKeyArn;
  };
  let published: Promise<{ keys: PublicJwk[] }> | undefined;
  return {
    signingKeyId: () => keyIdOfArn(signingArn()),
    sign: async (input) => {
      const answer = await kms().send(
        new SignCommand({
          KeyId: signingArn(),
          Message: input,
          MessageType: 'RAW',
          SigningAlgorithm: 'RSASSA_PKCS1_V1_5_SHA_256',
        }),
      );
      if (!answer.Signature) throw new Error('KMS answered no signature');
      return Buffer.from(answer.Signature);
    },
    jwks: () => {
      published ??= (async () => {
        const arns = options.publishedKeyArns ?? [];
        if (arns.length === 0) throw new Error(`${ID_TOKEN_PUBLISHED_KEYS_ENV} is not configured`);
        const keys = await Promise.all(
          arns.map(async (arn) => {
            const answer = await kms().send(new GetPublicKeyCommand({ KeyId: arn }));
            if (!answer.PublicKey) throw new Error(`KMS answered no public key for ${keyIdOfArn(arn)}`);
            return publicJwk(Buffer.from(answer.PublicKey), keyIdOfArn(arn));
          }),
        );
        return { keys };
      })();
      // A failed read is not kept: the next request tries again.
      published.catch(() => {
        published = undefined;
      });
      return published;
    },
  };
}

/** The keys as the stack configures a function (each function is given only its own variable). */
export function kmsIdTokenKeysFromEnv(env: NodeJS.ProcessEnv = process.env): IdTokenKeys {
  const published = env[ID_TOKEN_PUBLISHED_KEYS_ENV];
  return kmsIdTokenKeys({
    signingKeyArn: env[ID_TOKEN_SIGNING_KEY_ENV],
    publishedKeyArns: published ? published.split(',').filter(Boolean) : [],
  });
}

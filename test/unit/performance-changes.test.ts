/**
 * The shortcuts taken for speed (issue 5, test/bench) give exactly what they replaced.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultProvider, MissingEnvironmentCredentials } from '#infra/env-credentials.ts';
import { javaArguments } from '#scripts/local/dynamodb-local.ts';
import { grantedScopes, parseScope } from '#shared/domain/scopes.ts';
import { hashSecret } from '#shared/domain/secrets.ts';

describe('hashSecret', () => {
  it('is the hex SHA-256 of the UTF-8 text, as with a Hash object', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (secret) => {
        expect(hashSecret(secret)).toBe(createHash('sha256').update(secret, 'utf8').digest('hex'));
      }),
    );
  });
});

describe('grantedScopes', () => {
  it('is the set parseScope gives, computed once per scope string', () => {
    const scope = ' openid  profile\temail openid unknown:scope ';
    const granted = grantedScopes(scope);
    expect([...granted]).toEqual(parseScope(scope).scopes);
    expect(grantedScopes(scope)).toBe(granted);
    expect(grantedScopes('')).toEqual(new Set());
  });
});

describe('env-credentials (bundled in place of the SDK default chain)', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('reads the variables Lambda sets, as fromEnv does', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKID';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret';
    process.env.AWS_SESSION_TOKEN = 'session';
    process.env.AWS_CREDENTIAL_EXPIRATION = '2030-01-01T00:00:00Z';
    delete process.env.AWS_ACCOUNT_ID;
    delete process.env.AWS_CREDENTIAL_SCOPE;
    expect(await defaultProvider()()).toEqual({
      accessKeyId: 'AKID',
      secretAccessKey: 'secret',
      sessionToken: 'session',
      expiration: new Date('2030-01-01T00:00:00Z'),
    });
  });

  it('fails clearly without them', async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    await expect(defaultProvider()()).rejects.toBeInstanceOf(MissingEnvironmentCredentials);
  });
});

describe('DynamoDB Local JIT settings (docs/performance.md, section 5)', () => {
  const distribution = { libDir: '/lib', jar: '/lib/DynamoDBLocal.jar' };
  const engineOptions = (args: string[]) => args.slice(args.indexOf('-jar'));

  it("starts the tests' engines with C1 only, and npm start's with both tiers, the engine options alike", () => {
    const tests = javaArguments({}, distribution, 8000);
    const session = javaArguments({ jit: 'steady-state' }, distribution, 8000);
    expect(tests).toContain('-XX:TieredStopAtLevel=1');
    expect(session.some((arg) => arg.startsWith('-XX:TieredStopAtLevel'))).toBe(false);
    expect(engineOptions(session)).toEqual(engineOptions(tests));
    expect(engineOptions(tests)).toEqual([
      '-jar',
      '/lib/DynamoDBLocal.jar',
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      '8000',
    ]);
  });
});

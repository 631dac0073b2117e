/**
 * The webhook key set: the document CloudFormation generates parses, secrets are sealed under the
 * current version and bound to their endpoint, old versions keep opening after a rotation, and a
 * malformed set is refused without echoing its keys. Webhook secrets have the Standard Webhooks form.
 */
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { secretsManagerKeyring } from '#shared/data/webhook-keys.ts';
import {
  newKeySetDocument,
  noKeyring,
  openWith,
  parseKeySet,
  rotateKeySetDocument,
  sealWith,
  staticKeyring,
} from '#shared/domain/keyring.ts';
import { generateWebhookSecret } from '#shared/domain/secrets.ts';
import { signingKeys } from '#shared/domain/webhook-signature.ts';

const ENDPOINT = '6f1a3c2e-8b4d-4e5f-9a6b-7c8d9e0f1a2b';

describe('webhook key sets', () => {
  it('reads what GenerateSecretString writes: the template {"current":"k1"} plus a generated k1', () => {
    const generated = `{"current":"k1","k1":"${'aZ09'.repeat(16)}"}`;
    const { current, keys } = parseKeySet(generated);
    expect(current).toBe('k1');
    expect(keys.get('k1')).toHaveLength(32);
    expect(parseKeySet(newKeySetDocument()).keys.size).toBe(1);
    expect(JSON.parse(newKeySetDocument()).k1).toMatch(/^[A-Za-z0-9]{64}$/);
  });

  it('seals under the current version, bound to the endpoint: another id or a changed byte fails', async () => {
    const keyring = staticKeyring(newKeySetDocument());
    const sealed = await sealWith(keyring, 'whsec_secret', ENDPOINT);
    expect(sealed).toMatch(/^k1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('secret');
    expect(await openWith(keyring, sealed, ENDPOINT)).toBe('whsec_secret');
    await expect(openWith(keyring, sealed, ENDPOINT.replace('6f', '7f'))).rejects.toThrow();
    const tampered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'AB' : 'AA'}`;
    await expect(openWith(keyring, tampered, ENDPOINT)).rejects.toThrow();
    // Sealed twice, never the same text (a fresh IV each time).
    expect(await sealWith(keyring, 'whsec_secret', ENDPOINT)).not.toBe(sealed);
  });

  it('after a rotation, new secrets use k2 and k1 secrets still open; another key set opens neither', async () => {
    const first = newKeySetDocument();
    const rotated = rotateKeySetDocument(first);
    expect(JSON.parse(rotated)).toMatchObject({ current: 'k2', k1: JSON.parse(first).k1 });
    const before = await sealWith(staticKeyring(first), 'old', ENDPOINT);
    const after = await sealWith(staticKeyring(rotated), 'new', ENDPOINT);
    expect(after.startsWith('k2.')).toBe(true);
    expect(await openWith(staticKeyring(rotated), before, ENDPOINT)).toBe('old');
    expect(await openWith(staticKeyring(rotated), after, ENDPOINT)).toBe('new');
    await expect(openWith(staticKeyring(first), after, ENDPOINT)).rejects.toThrow(/unknown key version/);
    await expect(openWith(staticKeyring(newKeySetDocument()), before, ENDPOINT)).rejects.toThrow();
  });

  it('refuses malformed sets, naming no key material', () => {
    const material = 'x'.repeat(40);
    for (const document of [
      'not json',
      '[]',
      `{"k1":"${material}"}`,
      `{"current":"k2","k1":"${material}"}`,
      '{"current":"k1","k1":"short"}',
    ]) {
      let message = '';
      try {
        parseKeySet(document);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message, document).toMatch(/^webhook key set: /);
      expect(message).not.toContain(material);
    }
  });

  it('a container that loaded k1 opens a secret sealed under k2 by reading the store once more', async () => {
    const k1 = newKeySetDocument();
    const k2 = rotateKeySetDocument(k1);
    const documents = [k1, k2];
    let reads = 0;
    const client = {
      send: async () => ({ SecretString: documents[Math.min(reads++, documents.length - 1)] }),
    } as unknown as SecretsManagerClient;
    const keyring = secretsManagerKeyring('key-set', client);
    const underK1 = await sealWith(keyring, 'whsec_one', ENDPOINT);
    expect(underK1).toMatch(/^k1\./);
    expect(reads).toBe(1);
    // Another container (or the operator's rotate-keys) sealed this under k2.
    const underK2 = await sealWith(staticKeyring(k2), 'whsec_two', ENDPOINT);
    const [a, b] = await Promise.all([
      openWith(keyring, underK2, ENDPOINT),
      openWith(keyring, underK2, ENDPOINT),
    ]);
    expect([a, b]).toEqual(['whsec_two', 'whsec_two']);
    expect(reads).toBe(2);
    // From then on the container seals under k2 and reads nothing more.
    expect(await sealWith(keyring, 'whsec_three', ENDPOINT)).toMatch(/^k2\./);
    expect(await openWith(keyring, underK1, ENDPOINT)).toBe('whsec_one');
    expect(reads).toBe(2);
    // A version the store does not hold either stays an error.
    await expect(openWith(keyring, `k9.${underK2.slice(3)}`, ENDPOINT)).rejects.toThrow(
      /unknown key version/,
    );
  });

  it('a function given no key set fails loudly when it would need one', async () => {
    await expect(sealWith(noKeyring, 'x', ENDPOINT)).rejects.toThrow(/no access to the webhook key set/);
  });
});

describe('webhook signing secrets', () => {
  it('are whsec_ + base64 of 32 random bytes, and sign with the decoded bytes and the legacy UTF-8 key', () => {
    const secrets = new Set(Array.from({ length: 50 }, generateWebhookSecret));
    expect(secrets.size).toBe(50);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const [spec, legacy] = signingKeys(secret);
      expect(spec).toEqual(Buffer.from(secret.slice(6), 'base64'));
      expect(spec).toHaveLength(32);
      expect(legacy).toEqual(Buffer.from(secret, 'utf8'));
    }
  });
});

import { describe, expect, it } from 'vitest';
import { Unauthorized } from '#shared/domain/errors.ts';
import { ALL_SCOPES, DEFAULT_CLIENT_SCOPE, grants, parseScope } from '#shared/domain/scopes.ts';
import { generateSecret, hashSecret, hasSecretShape, secretPrefixes } from '#shared/domain/secrets.ts';
import { bearerToken } from '#shared/http/auth.ts';

describe('scope parsing', () => {
  it('splits on any whitespace and drops duplicates, keeping order', () => {
    expect(parseScope('  webhooks:write\tsubscriptions:write  webhooks:write ').scopes).toEqual([
      'webhooks:write',
      'subscriptions:write',
    ]);
  });

  it('reports values outside the specification list', () => {
    expect(parseScope('openid admin:everything').unknown).toEqual(['admin:everything']);
    expect(parseScope('').scopes).toEqual([]);
  });

  it('defaults to every scope of the specification, in its order, single-spaced', () => {
    expect(DEFAULT_CLIENT_SCOPE.split(' ')).toEqual([...ALL_SCOPES]);
    expect(ALL_SCOPES).toHaveLength(67);
    expect(ALL_SCOPES[0]).toBe('openid');
    expect(ALL_SCOPES.at(-1)).toBe('organization_access_tokens:write');
  });

  it('grants when any accepted scope is held, or when none is required', () => {
    const held = new Set(['customer_portal:write']);
    expect(grants(held, ['customer_portal:read', 'customer_portal:write'])).toBe(true);
    expect(grants(held, ['webhooks:write'])).toBe(false);
    expect(grants(new Set(), [])).toBe(true);
  });
});

describe('bearer credentials', () => {
  it('extracts the token, scheme case-insensitively', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer   abc ')).toBe('abc');
  });

  it.each([undefined, '', 'Bearer', 'Bearer   ', 'Basic dXNlcjpwYXNz', 'Token abc'])(
    'treats %j as no credential',
    (header) => {
      expect(() => bearerToken(header)).toThrow(Unauthorized);
    },
  );
});

describe('secrets', () => {
  it('generates prefixed secrets with at least 32 random characters, all different', () => {
    const secrets = new Set(
      Array.from({ length: 200 }, () => generateSecret(secretPrefixes.personalAccessToken)),
    );
    expect(secrets.size).toBe(200);
    for (const secret of secrets) {
      expect(secret.startsWith('polar_pat_')).toBe(true);
      expect(hasSecretShape(secret, 'polar_pat_')).toBe(true);
    }
  });

  it('hashes with SHA-256, hex', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('rejects garbage before any lookup', () => {
    expect(hasSecretShape('undefined', 'polar_pat_')).toBe(false);
    expect(hasSecretShape('polar_pat_short', 'polar_pat_')).toBe(false);
    expect(hasSecretShape(`polar_pat_${'a'.repeat(40)}'; DROP`, 'polar_pat_')).toBe(false);
  });
});

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): `webhook-id`, `webhook-timestamp`
 * and `webhook-signature`, the last carrying one `v1,<base64 HMAC-SHA256>` per key over
 * `<id>.<timestamp>.<payload>`, the exact bytes sent.
 *
 * Every delivery is signed with two keys per secret, so that every verifier in use accepts it:
 * - the spec's key: the bytes a `whsec_<base64>` secret encodes (the stock `standardwebhooks`
 *   libraries, and `@polar-sh/sdk` 1.x);
 * - the legacy key: the UTF-8 bytes of the whole secret string, prefix included (`@polar-sh/sdk`
 *   0.49's `validateEvent`, which base64-encodes the secret before handing it to the library).
 * During a secret reset's overlap both the new and the old secret sign (the spec's rotation).
 */
import { createHmac } from 'node:crypto';

export const SPEC_SECRET_PREFIX = 'whsec_';

/** The HMAC keys of one secret: the spec's decoded bytes (when it has that form), then the legacy UTF-8 bytes. */
export function signingKeys(secret: string): Buffer[] {
  const keys: Buffer[] = [];
  if (secret.startsWith(SPEC_SECRET_PREFIX)) {
    const encoded = secret.slice(SPEC_SECRET_PREFIX.length);
    const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(encoded) ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
    if (decoded.length > 0) keys.push(decoded);
  }
  const legacy = Buffer.from(secret, 'utf8');
  if (!keys.some((key) => key.equals(legacy))) keys.push(legacy);
  return keys;
}

export interface SignedMessage {
  /** Stable across every attempt and redelivery of one event to one endpoint: the receiver's dedupe key. */
  id: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  /** The exact body sent. */
  payload: string;
}

/** The `webhook-signature` value: `v1,<sig>` per key of each secret, space-separated, no duplicates. */
export function signatureHeader(message: SignedMessage, secrets: readonly string[]): string {
  if (message.id.includes('.') || !Number.isSafeInteger(message.timestamp) || message.timestamp < 0) {
    throw new RangeError('webhook id and timestamp must not contain "." (the signed content separator)');
  }
  if (secrets.length === 0) throw new RangeError('at least one secret signs a delivery');
  const content = `${message.id}.${message.timestamp}.${message.payload}`;
  const signatures = secrets.flatMap((secret) =>
    signingKeys(secret).map(
      (key) => `v1,${createHmac('sha256', key).update(content, 'utf8').digest('base64')}`,
    ),
  );
  return [...new Set(signatures)].join(' ');
}

/** The headers of one delivery attempt. */
export function deliveryHeaders(message: SignedMessage, secrets: readonly string[]): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'commerce-api webhooks',
    'webhook-id': message.id,
    'webhook-timestamp': String(message.timestamp),
    'webhook-signature': signatureHeader(message, secrets),
  };
}

/**
 * The key set that seals webhook signing secrets, with versions for rotation.
 *
 * One JSON document holds every key by version and names the current one:
 *
 *     {"current":"k1","k1":"<64 random letters and digits>"}
 *
 * It is the shape CloudFormation's `GenerateSecretString` writes (template `{"current":"k1"}`,
 * generated key `k1`), so the deployed stack creates the first version itself, and the shape
 * `npm start` writes for its own key set: one parser, one derivation, whichever store holds it.
 * Each version's AES-256 key is derived from its text with HKDF-SHA256. A sealed secret names the
 * version that sealed it (`k1.<base64url>`), so after a rotation (add `k2`, make it current) old
 * secrets still open and new ones are sealed with `k2`.
 */
import { hkdfSync, randomInt } from 'node:crypto';
import { open, seal } from './secret-box.ts';

export interface KeySet {
  current: string;
  keys: ReadonlyMap<string, Buffer>;
}

/**
 * Reads the key set (once, where it comes from a store); rejects when it cannot be had. `fresh`
 * reads the store again: a secret sealed under a version this container has not seen (an operator
 * rotated the key set after it loaded) is opened with the store's current document.
 */
export type Keyring = (fresh?: boolean) => Promise<KeySet>;

const VERSION = /^k[1-9][0-9]{0,5}$/;
const MIN_MATERIAL_LENGTH = 32;
const HKDF_INFO = 'commerce-api webhook signing secrets';
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

const deriveKey = (material: string): Buffer =>
  Buffer.from(hkdfSync('sha256', Buffer.from(material, 'utf8'), Buffer.alloc(0), HKDF_INFO, 32));

/** Parses a key-set document; a malformed one is an operator's error, reported without its contents. */
export function parseKeySet(document: string): KeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(document);
  } catch {
    throw new Error('webhook key set: not a JSON document');
  }
  if (typeof parsed !== 'object' || parsed === null) throw new Error('webhook key set: not a JSON object');
  const { current, ...versions } = parsed as Record<string, unknown>;
  const keys = new Map<string, Buffer>();
  for (const [version, material] of Object.entries(versions)) {
    if (!VERSION.test(version)) continue;
    if (typeof material !== 'string' || material.length < MIN_MATERIAL_LENGTH) {
      throw new Error(
        `webhook key set: key ${version} must be a string of at least ${MIN_MATERIAL_LENGTH} characters`,
      );
    }
    keys.set(version, deriveKey(material));
  }
  if (typeof current !== 'string' || !keys.has(current)) {
    throw new Error('webhook key set: "current" must name one of its keys');
  }
  return { current, keys };
}

const randomMaterial = (): string =>
  Array.from({ length: 64 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('');

/** A new key set with one version, as the stack's generated secret holds it. */
export function newKeySetDocument(): string {
  return JSON.stringify({ current: 'k1', k1: randomMaterial() });
}

/** The document with a new version added and made current; older versions stay to open old secrets. */
export function rotateKeySetDocument(document: string): string {
  const parsed = JSON.parse(document) as Record<string, unknown>;
  const versions = Object.keys(parsed)
    .filter((name) => VERSION.test(name))
    .map((name) => Number(name.slice(1)));
  const next = `k${Math.max(0, ...versions) + 1}`;
  return JSON.stringify({ ...parsed, current: next, [next]: randomMaterial() });
}

/** A keyring over a document held in memory (`npm start`, tests, the operator CLI's local target). */
export function staticKeyring(document: string): Keyring {
  const keySet = parseKeySet(document);
  return async () => keySet;
}

/** For functions that are given no key set: any use is a wiring fault, never a client's. */
export const noKeyring: Keyring = async () => {
  throw new Error('this function has no access to the webhook key set');
};

/** Seals a secret with the current key, bound to `context` (an endpoint id): `<version>.<sealed>`. */
export async function sealWith(keyring: Keyring, plaintext: string, context: string): Promise<string> {
  const { current, keys } = await keyring();
  return `${current}.${seal(plaintext, keys.get(current) as Buffer, context)}`;
}

/** The version a sealed secret names (`k2` of `k2.<sealed>`). */
export const sealedVersion = (sealed: string): string => sealed.slice(0, Math.max(0, sealed.indexOf('.')));

/** Opens what `sealWith` sealed for the same context, with the version it names. */
export async function openWith(keyring: Keyring, sealed: string, context: string): Promise<string> {
  const version = sealedVersion(sealed);
  const key =
    (await keyring()).keys.get(version) ?? (version ? (await keyring(true)).keys.get(version) : undefined);
  if (!key) throw new Error('webhook secret sealed with an unknown key version');
  return open(sealed.slice(version.length + 1), key, context);
}

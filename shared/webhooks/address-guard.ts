/**
 * Where webhook deliveries may go: the one guard for both moments that decide it.
 *
 * - When an endpoint is created, updated or re-enabled (`checkWebhookUrl`): the URL's own host, an
 *   address literal (in any spelling WHATWG URL accepts: `2130706433`, `0177.1`, `0x7f.1`,
 *   `[::ffff:127.0.0.1]` all become the address they mean) or a name.
 * - When a delivery connects (`addressGuard`, applied by `shared/webhooks/send.ts` inside the
 *   socket's DNS lookup): every address the name resolves to, so a name that pointed at a public
 *   address when it was saved and points at 169.254.169.254 now is refused then.
 *
 * Only globally reachable unicast addresses pass: no private, loopback, link-local, unique-local,
 * shared (CGNAT), multicast, unspecified, documentation, benchmarking or reserved ranges (the IANA
 * special-purpose registries), no cloud metadata service, in IPv4 and IPv6, with IPv4 embedded in
 * IPv6 (mapped, NAT64, 6to4) judged as the IPv4 address it carries. `allowLoopback` lets a local
 * run deliver to 127.0.0.0/8, ::1 and `localhost` (plain http included); the deployed functions
 * are built with it off and nothing in their environment can turn it on.
 */
import { isIP } from 'node:net';
import { authorityProblem } from '../domain/client-uris.ts';
import { type AddressPolicy, DEPLOYED_ADDRESS_POLICY } from './address-policy.ts';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'unspecified'
  | 'documentation'
  | 'reserved'
  | 'metadata';

type Range = readonly [network: bigint, prefix: number, kind: AddressClass];

const v4 = (text: string): bigint =>
  text.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);

/** Cloud metadata and platform services: refused by name, even where their range alone would pass. */
const METADATA_V4 = [
  '169.254.169.254',
  '169.254.170.2',
  '169.254.169.123',
  '168.63.129.16',
  '100.100.100.200',
];

/** IANA IPv4 special-purpose ranges that are not globally reachable, plus multicast and class E. */
const IPV4_RANGES: Range[] = [
  ...METADATA_V4.map((address): Range => [v4(address), 32, 'metadata']),
  [v4('0.0.0.0'), 8, 'unspecified'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'shared'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'reserved'],
  [v4('192.0.2.0'), 24, 'documentation'],
  [v4('192.88.99.0'), 24, 'reserved'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'reserved'],
  [v4('198.51.100.0'), 24, 'documentation'],
  [v4('203.0.113.0'), 24, 'documentation'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved'],
];

/** Parses an IPv6 address (`::` compression, a trailing dotted quad) into its 128 bits. */
function v6(text: string): bigint {
  let groups = text;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (dotted?.[1]) {
    const value = v4(dotted[1]);
    groups = `${groups.slice(0, -dotted[1].length)}${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = groups.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].reduce((value, group) => (value << 16n) | BigInt(`0x${group}`), 0n);
}

const IPV6_RANGES: Range[] = [
  [v6('fd00:ec2::254'), 128, 'metadata'],
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('64:ff9b:1::'), 48, 'private'],
  [v6('100::'), 64, 'reserved'],
  [v6('2001:db8::'), 32, 'documentation'],
  [v6('2001::'), 23, 'reserved'],
  [v6('3fff::'), 20, 'documentation'],
  [v6('5f00::'), 16, 'reserved'],
  [v6('fc00::'), 7, 'unique-local'],
  [v6('fe80::'), 10, 'link-local'],
  [v6('fec0::'), 10, 'private'],
  [v6('ff00::'), 8, 'multicast'],
];

/** Where IPv6 carries an IPv4 address: mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedV4(address: bigint): bigint | undefined {
  if (address >> 32n === 0xffffn) return address & 0xffffffffn;
  if (address >> 32n === v6('64:ff9b::') >> 32n) return address & 0xffffffffn;
  if (address >> 112n === 0x2002n) return (address >> 80n) & 0xffffffffn;
  return undefined;
}

const inRange = (address: bigint, bits: number, [network, prefix]: Range) =>
  address >> BigInt(bits - prefix) === network >> BigInt(bits - prefix);

function classifyV4(address: bigint): AddressClass {
  return IPV4_RANGES.find((range) => inRange(address, 32, range))?.[2] ?? 'public';
}

function classifyV6(address: bigint): AddressClass {
  const embedded = embeddedV4(address);
  if (embedded !== undefined) return classifyV4(embedded);
  const special = IPV6_RANGES.find((range) => inRange(address, 128, range))?.[2];
  if (special) return special;
  // Global unicast is 2000::/3; everything else (IPv4-compatible ::/96 included) is reserved.
  return address >> 125n === 1n ? 'public' : 'reserved';
}

/**
 * The class of an IP address in its canonical text form; undefined for anything that is not one.
 * A scoped IPv6 address (`fe80::1%eth0`, RFC 4007) names a link of this host, never a global one:
 * link-local, whatever the address part says.
 */
export function classifyAddress(address: string): AddressClass | undefined {
  const literal = address.replace(/^\[(.*)\]$/, '$1');
  if (literal.includes('%')) return isIP(literal) === 6 ? 'link-local' : undefined;
  switch (isIP(literal)) {
    case 4:
      return classifyV4(v4(literal));
    case 6:
      return classifyV6(v6(literal.toLowerCase()));
    default:
      return undefined;
  }
}

export function addressAllowed(address: string, policy: AddressPolicy = DEPLOYED_ADDRESS_POLICY): boolean {
  const kind = classifyAddress(address);
  return kind === 'public' || (kind === 'loopback' && policy.allowLoopback);
}

/** The send-time check, for `sendAttempt`'s DNS lookup: every resolved address must pass. */
export const addressGuard =
  (policy: AddressPolicy = DEPLOYED_ADDRESS_POLICY) =>
  (address: string, _family?: number): boolean =>
    addressAllowed(address, policy);

// ---------------------------------------------------------------------------
// URLs, when an endpoint is saved.
// ---------------------------------------------------------------------------

export const MAX_WEBHOOK_URL_LENGTH = 2083;

/** Names that never reach a public host: RFC 6761 `localhost`, mDNS `.local`, `.internal`, `home.arpa`. */
const PRIVATE_NAME = /(^|\.)(localhost|local|internal|home\.arpa)$/;
const LOOPBACK_NAME = /(^|\.)localhost$/;
/** A DNS label as hostnames use them (RFC 1123): letters, digits, inner hyphens, 1 to 63 characters. */
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export interface UrlProblem {
  type: string;
  msg: string;
}

export type UrlCheck = { ok: true; url: string } | ({ ok: false } & UrlProblem);

export const URL_PROBLEMS = {
  parsing: { type: 'url_parsing', msg: 'Input should be a valid URL.' },
  scheme: { type: 'url_scheme', msg: "URL scheme should be 'https'." },
  userinfo: { type: 'value_error', msg: 'Webhook URLs cannot contain user information.' },
  tooLong: { type: 'url_too_long', msg: `URL should have at most ${MAX_WEBHOOK_URL_LENGTH} characters.` },
  private: { type: 'value_error', msg: 'Webhook URLs cannot point to localhost or private IP addresses.' },
  hostname: {
    type: 'value_error',
    msg: 'Invalid webhook URL: the hostname contains characters not allowed in domain names.',
  },
  port: { type: 'value_error', msg: 'Webhook URLs can only use port 443 or 80.' },
} as const satisfies Record<string, UrlProblem>;

const refuse = (problem: UrlProblem): UrlCheck => ({ ok: false, ...problem });

/** The host of a WHATWG-parsed URL: a private or loopback one, a malformed name, or fine (undefined). */
function hostProblem(hostname: string, policy: AddressPolicy): UrlProblem | undefined {
  if (classifyAddress(hostname) !== undefined) {
    return addressAllowed(hostname, policy) ? undefined : URL_PROBLEMS.private;
  }
  const name = hostname.replace(/\.$/, '');
  if (policy.allowLoopback && LOOPBACK_NAME.test(name)) return undefined;
  if (PRIVATE_NAME.test(name)) return URL_PROBLEMS.private;
  const labels = name.split('.');
  if (name.length > 253 || !labels.every((label) => LABEL.test(label))) return URL_PROBLEMS.hostname;
  // A single label is resolved through the resolver's search domains: someone's intranet.
  if (labels.length < 2) return URL_PROBLEMS.private;
  return undefined;
}

const isLoopbackHost = (hostname: string) =>
  classifyAddress(hostname) === 'loopback' || LOOPBACK_NAME.test(hostname.replace(/\.$/, ''));

/** WHATWG drops a scheme's default port (`https://h:443/` has port ''), so '' is 443 or 80. */
const WEB_PORTS = new Set(['', '80', '443']);

/**
 * Deliveries go to the web's ports only (443 and 80), so that the deliverer cannot be pointed at any
 * other service of a host; a local run's receivers on loopback may use any port.
 */
export function portAllowed(url: URL, policy: AddressPolicy = DEPLOYED_ADDRESS_POLICY): boolean {
  return WEB_PORTS.has(url.port) || (policy.allowLoopback && isLoopbackHost(url.hostname));
}

/**
 * A webhook URL as it will be stored (WHATWG-normalised: lowercase host, punycode, canonical
 * address literals), or why it is refused. Surrounding whitespace is ignored, as the hosted service
 * strips it.
 */
export function checkWebhookUrl(input: string, policy: AddressPolicy = DEPLOYED_ADDRESS_POLICY): UrlCheck {
  const text = input.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse(URL_PROBLEMS.parsing);
  }
  const scheme = text.slice(0, text.indexOf(':')).toLowerCase();
  const plainLoopback = scheme === 'http' && policy.allowLoopback && isLoopbackHost(url.hostname);
  if (scheme !== 'https' && !plainLoopback) return refuse(URL_PROBLEMS.scheme);
  // Read as RFC 3986 splits the text: WHATWG repairs `https:host` and `https:///host` into a host.
  const authority = authorityProblem(text.slice(scheme.length + 1));
  if (authority) return refuse(authority.includes('user') ? URL_PROBLEMS.userinfo : URL_PROBLEMS.parsing);
  const problem = hostProblem(url.hostname, policy);
  if (problem) return refuse(problem);
  if (!portAllowed(url, policy)) return refuse(URL_PROBLEMS.port);
  if ([...url.href].length > MAX_WEBHOOK_URL_LENGTH) return refuse(URL_PROBLEMS.tooLong);
  return { ok: true, url: url.href };
}

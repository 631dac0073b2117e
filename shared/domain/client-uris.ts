/**
 * What a registered client may point users at (RFC 7591 §2, RFC 8252 §7–8, RFC 9110 §4.2). Each
 * check answers why a URI is refused, or `undefined`.
 *
 * Hosts are read from the text as RFC 3986 splits it, not only from WHATWG `URL`, which repairs
 * what it parses: `https:///cb` and `https:cb` both become `https://cb/`.
 */
import { isIP } from 'node:net';

/** Schemes that would run or read something in the user agent instead of loading a page. */
const UNSAFE_SCHEMES = new Set(['javascript', 'data', 'file', 'vbscript', 'blob', 'about']);
/** RFC 3986 §3.1: the scheme, then everything after its colon. */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s;
/** Only characters RFC 3986 allows, `%` introducing two hex digits (no spaces, no raw Unicode). */
const URI_CHARACTERS = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

const HTTPS_ONLY = 'must be an absolute https URL (http only for localhost or a loopback address)';

export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host.toLowerCase() === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1';
  return false;
}

/** An http(s) URI must name a host (RFC 9110 §4.2.1–4.2.2) and no user information (§4.2.4). */
export function authorityProblem(afterScheme: string): string | undefined {
  if (!afterScheme.startsWith('//')) return 'names no host';
  const authority = afterScheme.slice(2).split(/[/?#]/, 1)[0] ?? '';
  if (authority.includes('@')) return 'must not contain user information';
  if (authority.replace(/:\d*$/, '') === '') return 'names no host';
  return undefined;
}

const parses = (uri: string): URL | undefined => {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
};

/** A redirect URI (already an absolute RFC 3986 URI by the schema). */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.includes('#')) return 'must not contain a fragment';
  const [, scheme = '', rest = ''] = SCHEME.exec(uri) ?? [];
  // RFC 3986 syntax (the schema's check) admits hosts and ports no browser can reach.
  const url = parses(uri);
  if (!url) return 'is not a usable URL';
  const lower = scheme.toLowerCase();
  if (UNSAFE_SCHEMES.has(lower)) return `uses a scheme that is not allowed (${lower}:)`;
  if (lower !== 'http' && lower !== 'https') return undefined; // private-use schemes (RFC 8252 §7.1)
  const problem = authorityProblem(rest);
  if (problem) return problem;
  if (lower === 'http' && !isLoopback(url.hostname)) {
    return 'must use https unless it points to localhost or a loopback address';
  }
  return undefined;
}

/** A page or image shown to users: `client_uri`, `logo_uri`, `tos_uri`, `policy_uri`. */
export function webUrlProblem(uri: string): string | undefined {
  const [, scheme = '', rest = ''] = SCHEME.exec(uri) ?? [];
  const lower = scheme.toLowerCase();
  if (!URI_CHARACTERS.test(uri) || (lower !== 'http' && lower !== 'https')) return HTTPS_ONLY;
  const problem = authorityProblem(rest);
  if (problem) return problem;
  const url = parses(uri);
  if (!url) return 'is not a usable URL';
  if (lower === 'http' && !isLoopback(url.hostname)) return HTTPS_ONLY;
  return undefined;
}

/**
 * The issuer: the API's own base URL, from configuration (`ISSUER_URL`, set per stage by the stack:
 * its custom domain, else the HTTP API's URL; `npm start` sets its own address). Every absolute URL
 * the API hands out that points back at itself is built on it: the OAuth metadata, RFC 9207's `iss`,
 * RFC 7592's `registration_client_uri`, the ID Token's `iss`, the default customer-portal URL. Never
 * from a request's `Host` header, which the caller chooses.
 */

/** Where the issuer is missing: a stack without it is misconfigured, and every such request says so. */
export class IssuerNotConfigured extends Error {
  constructor(name: string) {
    super(`${name} is not configured: the issuer (the API's base URL) comes from the stage's configuration`);
  }
}

const LOOPBACK = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/i;

/**
 * Checks an issuer as OpenID Connect Discovery 1.0 §3 and RFC 8414 §2 define it: an `https` URL
 * (plain `http` only on loopback, for `npm start`) with no query or fragment; a trailing slash is
 * dropped, so endpoint URLs join cleanly. Returns the normalised value or throws with the reason.
 */
export function parseIssuer(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`issuer must be an absolute URL: ${value}`);
  }
  const loopback = LOOPBACK.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new Error(`issuer must be an https URL (http only on loopback): ${value}`);
  }
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    throw new Error(`issuer must have no query or fragment: ${value}`);
  }
  if (url.username || url.password) throw new Error(`issuer must have no user information: ${value}`);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

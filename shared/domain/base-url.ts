/**
 * The API's own origin, from the request's `Host`: `https` everywhere but on loopback, where
 * `npm start` serves plain `http`. Used for URLs the API hands out that point back at itself
 * (RFC 7592's `registration_client_uri`, the default customer-portal URL).
 */
export function baseUrlOf(host: string | undefined): string {
  const name = (host ?? 'localhost').toLowerCase();
  const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(name);
  return `${loopback ? 'http' : 'https'}://${name}`;
}

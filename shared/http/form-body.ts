/**
 * `application/x-www-form-urlencoded` request bodies, as RFC 6749 §3.2 has the token endpoint (and
 * RFC 7009, RFC 7662 the revocation and introspection endpoints) take them: read strictly, and every
 * fault answered in RFC 6749's error form (`invalid_request`), not the JSON operations' 422.
 *
 * - The media type is checked first (415) and the size next (413), as for JSON bodies.
 * - UTF-8 only: a base64 body (API Gateway base64-encodes form bodies) is decoded fatally, and a
 *   percent-escape must spell UTF-8 bytes; `%zz` or a lone `%` is refused, not kept as text.
 * - A parameter sent twice is refused (RFC 6749 §3.1); one sent without a value counts as absent.
 */
import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { OAuthError } from '../domain/errors.ts';

export const FORM_MEDIA_TYPE = /^application\/x-www-form-urlencoded\s*(?:;\s*charset="?utf-8"?\s*)?$/i;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const invalid = (description: string, status = 400) => new OAuthError('invalid_request', description, status);

/** One name or value: `+` is a space, `%XX` a byte; each run of escapes must be whole UTF-8 characters. */
function decodeComponent(raw: string): string {
  const text = raw.replaceAll('+', ' ');
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) throw invalid('The body has a malformed percent-escape.');
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return utf8.decode(Buffer.from(run.replaceAll('%', ''), 'hex'));
    } catch {
      throw invalid('The body is not UTF-8.');
    }
  });
}

/** The parameters of a form body, by name; throws `invalid_request` for any fault. */
export function parseForm(body: string): Record<string, string> {
  const parameters: Record<string, string> = Object.create(null);
  const seen = new Set<string>();
  for (const pair of body.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decodeComponent(equals === -1 ? pair : pair.slice(0, equals));
    const value = equals === -1 ? '' : decodeComponent(pair.slice(equals + 1));
    if (seen.has(name)) throw invalid(`The parameter ${name} is repeated.`);
    seen.add(name);
    if (value !== '') parameters[name] = value;
  }
  return { ...parameters };
}

/**
 * The form body steps of the middleware stack, in place of the JSON ones: media type, size, strict
 * decoding, parsing. The parsed parameters replace `event.body`, as the JSON parser does.
 */
export const formBody = (maxBytes: number): middy.MiddlewareObj<APIGatewayProxyEventV2> => ({
  before: async (request) => {
    const { headers, body, isBase64Encoded } = request.event;
    if (!FORM_MEDIA_TYPE.test(headers?.['content-type'] ?? '')) {
      throw invalid('Content-Type must be application/x-www-form-urlencoded.', 415);
    }
    const bytes = Buffer.from(body ?? '', isBase64Encoded ? 'base64' : 'utf8');
    if (bytes.length > maxBytes) throw invalid(`The body must not exceed ${maxBytes} bytes.`, 413);
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw invalid('The body is not UTF-8.');
    }
    (request.event as { body: unknown }).body = parseForm(text);
    request.event.isBase64Encoded = false;
  },
});

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadOpenApi } from '#scripts/openapi.ts';
import { DOCS_CONTENT_SECURITY_POLICY, serveReference, swaggerUiAssets } from '#shared/http/api-reference.ts';
import type { ApiResult } from '#shared/http/responses.ts';

const plain = {};
const gzip = { 'accept-encoding': 'gzip, deflate, br' };

/** The body as the client reads it, whichever encoding the answer took. */
const bodyOf = (result: ApiResult | undefined): string => {
  if (!result) throw new Error('no answer');
  const raw = result.body ?? '';
  if (!result.isBase64Encoded) return raw;
  const bytes = Buffer.from(raw, 'base64');
  return result.headers?.['Content-Encoding'] === 'gzip'
    ? gunzipSync(bytes).toString('utf8')
    : bytes.toString('utf8');
};

describe('GET /openapi.json', () => {
  it('is the document the validators are generated from, parsed from the YAML', () => {
    const answer = serveReference('/openapi.json', plain);
    expect(answer?.statusCode).toBe(200);
    expect(answer?.headers?.['Content-Type']).toBe('application/json');
    expect(JSON.parse(bodyOf(answer))).toEqual(loadOpenApi());
  });

  it('is the same gzipped, when the client takes gzip, and with a trailing slash', () => {
    const zipped = serveReference('/openapi.json/', gzip);
    expect(zipped?.headers?.['Content-Encoding']).toBe('gzip');
    expect(zipped?.isBase64Encoded).toBe(true);
    expect(zipped?.headers?.Vary).toBe('Accept-Encoding');
    expect(JSON.parse(bodyOf(zipped))).toEqual(loadOpenApi());
    // Smaller on the wire: the point of compressing.
    expect(Buffer.from(zipped?.body ?? '', 'base64').length).toBeLessThan(bodyOf(zipped).length / 4);
  });
});

describe('GET /docs', () => {
  const page = serveReference('/docs', plain);
  const html = bodyOf(page);

  it('is an HTML page under a policy that lets it load nothing from another origin', () => {
    expect(page?.statusCode).toBe(200);
    expect(page?.headers?.['Content-Type']).toBe('text/html; charset=utf-8');
    expect(page?.headers?.['Content-Security-Policy']).toBe(DOCS_CONTENT_SECURITY_POLICY);
    expect(DOCS_CONTENT_SECURITY_POLICY).toContain("default-src 'none'");
    expect(DOCS_CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(DOCS_CONTENT_SECURITY_POLICY).not.toMatch(/https?:|\*/);
    // No inline script: the policy would block it.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('references only assets the function serves, each with its media type, cacheable forever', () => {
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)]
      .map((match) => match[1] as string)
      // The empty icon keeps browsers from asking for /favicon.ico.
      .filter((url) => url !== 'data:,');
    expect(urls.length).toBe(3);
    for (const url of urls) {
      const path = new URL(url, 'https://api.example.com').pathname;
      const asset = serveReference(path, gzip);
      expect(asset?.statusCode, url).toBe(200);
      expect(asset?.headers?.['Cache-Control']).toBe('public, max-age=31536000, immutable');
      expect(url).toMatch(/\?v=\d+\.\d+\.\d+$/);
    }
  });

  it('serves the pinned swagger-ui-dist files byte for byte', () => {
    const require = createRequire(import.meta.url);
    for (const [file, type] of Object.entries(swaggerUiAssets)) {
      const answer = serveReference(`/docs/${file}`, plain);
      expect(answer?.headers?.['Content-Type']).toBe(type);
      expect(bodyOf(answer)).toBe(readFileSync(require.resolve(`swagger-ui-dist/${file}`), 'utf8'));
    }
    const version = (require('swagger-ui-dist/package.json') as { version: string }).version;
    expect(html).toContain(`swagger-ui-bundle.js?v=${version}`);
  });

  it('start-up script: the document from this origin, no validator badge (it would send the document away)', () => {
    const script = bodyOf(serveReference('/docs/init.js', plain));
    expect(script).toContain('url: "/openapi.json"');
    expect(script).toContain('validatorUrl: null');
  });

  it('anything else under /docs is nothing, however it is spelt', () => {
    for (const path of [
      '/docs/package.json',
      '/docs/index.html',
      '/docs/../package.json',
      '/docs/swagger-ui.js',
      '/docs/swagger-ui-bundle.js.map',
      '/docs//swagger-ui.css',
      '/docs/SWAGGER-UI.CSS',
      '/docs/constructor',
      '/docs/__proto__',
      '/docsx',
    ]) {
      expect(serveReference(path, plain), path).toBeUndefined();
    }
  });
});

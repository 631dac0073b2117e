/**
 * The API reference: the OpenAPI document as JSON and a Swagger UI page that renders it.
 *
 * Swagger UI's two assets (`swagger-ui-bundle.js`, `swagger-ui.css`, from the pinned
 * `swagger-ui-dist` package) are copied next to the function's bundle at build time
 * (`infra/function.ts`, `assets`); a local run reads them from `node_modules`. Nothing is loaded from
 * a CDN, and the page's Content-Security-Policy lets the browser fetch nothing from anywhere else.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import swaggerUiPackage from 'swagger-ui-dist/package.json' with { type: 'json' };
import openapi from '../generated/openapi.json' with { type: 'json' };
import type { ApiResult } from './responses.ts';

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

/** The package the page's assets come from; its version in their URLs makes them cacheable forever. */
export const SWAGGER_UI_PACKAGE = 'swagger-ui-dist';

/** Files of `swagger-ui-dist` the page loads, with their media types; `infra/function.ts` ships exactly these. */
export const swaggerUiAssets = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
} as const;
type SwaggerUiAsset = keyof typeof swaggerUiAssets;

const INIT_SCRIPT = 'init.js';
/** The page's key among the assets: no file name can be empty. */
const PAGE = '';

/**
 * Our own start-up script, served as a file so that the policy needs no inline script. No
 * validator badge (it would send the document to validator.swagger.io); deep links so a
 * reader can share an operation's address.
 */
const initScript = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: '#reference',
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
  });
});
`;

const page = (version: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${escapeHtml(openapi.info.title)} — API reference</title>
<link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css?v=${version}">
</head>
<body>
<div id="reference"></div>
<script src="${DOCS_PATH}/swagger-ui-bundle.js?v=${version}"></script>
<script src="${DOCS_PATH}/${INIT_SCRIPT}?v=${version}"></script>
</body>
</html>
`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Scripts and styles from this origin only; Swagger UI sets inline styles and shows data: images.
 * The document is fetched from this origin too (`connect-src 'self'`).
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const security = {
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
} as const;

interface Asset {
  type: string;
  /** Immutable: the URL carries the package version. */
  cache: string;
  text: string;
  gzipped?: string;
}

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const here = dirname(fileURLToPath(import.meta.url));
const requireHere = createRequire(import.meta.url);

/** Next to the bundle (deployed) or in `node_modules` (local run). */
function assetFile(file: string): string {
  const shipped = join(here, file);
  return existsSync(shipped) ? shipped : requireHere.resolve(`${SWAGGER_UI_PACKAGE}/${file}`);
}

const assets = new Map<string, Asset>();

function loadAsset(name: string): Asset | undefined {
  const known = assets.get(name);
  if (known) return known;
  let asset: Asset | undefined;
  if (name === PAGE) {
    asset = { type: 'text/html; charset=utf-8', cache: REVALIDATE, text: page(swaggerUiPackage.version) };
  } else if (name === INIT_SCRIPT) {
    asset = { type: 'text/javascript; charset=utf-8', cache: IMMUTABLE, text: initScript };
  } else if (Object.hasOwn(swaggerUiAssets, name)) {
    asset = {
      type: swaggerUiAssets[name as SwaggerUiAsset],
      cache: IMMUTABLE,
      text: readFileSync(assetFile(name), 'utf8'),
    };
  }
  if (asset) assets.set(name, asset);
  return asset;
}

const acceptsGzip = (headers: Record<string, string | undefined>): boolean =>
  /\bgzip\b/i.test(headers['accept-encoding'] ?? '');

/** A text answer, gzipped when the client takes it (Swagger UI's script is 1.7 MB, 0.5 MB gzipped). */
function text(
  asset: Asset,
  headers: Record<string, string | undefined>,
  extra: Record<string, string> = {},
): ApiResult {
  const common = {
    'Content-Type': asset.type,
    'Cache-Control': asset.cache,
    Vary: 'Accept-Encoding',
    ...security,
    ...extra,
  };
  if (!acceptsGzip(headers)) return { statusCode: 200, headers: common, body: asset.text };
  asset.gzipped ??= gzipSync(asset.text).toString('base64');
  return {
    statusCode: 200,
    headers: { ...common, 'Content-Encoding': 'gzip' },
    body: asset.gzipped,
    isBase64Encoded: true,
  };
}

const documentAsset: Asset = { type: 'application/json', cache: REVALIDATE, text: JSON.stringify(openapi) };

/**
 * The answer to a request on one of the reference's routes (`rawPath`: the request's path), or
 * undefined when nothing is there (an unknown file under `/docs/`).
 */
export function serveReference(
  rawPath: string,
  headers: Record<string, string | undefined>,
): ApiResult | undefined {
  const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, '') : rawPath;
  if (path === OPENAPI_PATH) {
    return text(documentAsset, headers);
  }
  if (path === DOCS_PATH) {
    return text(loadAsset(PAGE) as Asset, headers, {
      'Content-Security-Policy': DOCS_CONTENT_SECURITY_POLICY,
    });
  }
  const name = path.startsWith(`${DOCS_PATH}/`) ? path.slice(DOCS_PATH.length + 1) : PAGE;
  const asset = name === PAGE ? undefined : loadAsset(name);
  return asset ? text(asset, headers) : undefined;
}

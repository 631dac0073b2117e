/**
 * The API reference as a reader meets it: `/docs` from the local API (the same routes and handler
 * the stack deploys) in headless Chromium (Debian's `chromium`, driven by playwright-core). The page
 * must render every operation of the OpenAPI document, and of the route table, load nothing from
 * another origin and log no error (a Content-Security-Policy violation is one).
 *
 * Each run leaves a screenshot in `.local/test-output/api-reference.png`; `UPDATE_DOCS_SCREENSHOT=1`
 * writes it to `docs/images/api-reference.png`, the one docs/architecture.md shows.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '#scripts/local/stack.ts';
import { loadOpenApi } from '#scripts/openapi.ts';
import { routePath } from '#shared/http/routes.ts';
import { operations } from '#shared/operations.ts';
import { startLocalApi } from '../support/local-api.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCREENSHOT = process.env.UPDATE_DOCS_SCREENSHOT
  ? join(ROOT, 'docs', 'images', 'api-reference.png')
  : join(ROOT, '.local', 'test-output', 'api-reference.png');

let stack: LocalStack;
let browser: Browser;
let base: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH`,
    );
  }
  stack = await startLocalApi('reference');
  base = stack.demo.base_url;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
  });
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

interface Rendered {
  operations: string[];
  requests: string[];
  problems: string[];
}

async function renderDocs(): Promise<Rendered> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
  });
  try {
    const answer = await page.goto(`${base}/docs`);
    expect(answer?.status()).toBe(200);
    await page.waitForSelector('.opblock-summary', { timeout: 30_000 });
    const rendered = await page.$$eval('.opblock-summary', (blocks) =>
      blocks.map((block) => {
        const method = block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '';
        const path = block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method.toUpperCase()} ${path}`;
      }),
    );
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
    console.info(`screenshot of /docs: ${SCREENSHOT}`);
    return { operations: rendered, requests, problems };
  } finally {
    await page.close();
  }
}

describe('GET /docs in headless Chromium', () => {
  let rendered: Rendered;
  beforeAll(async () => {
    rendered = await renderDocs();
  }, 60_000);

  it('lists every operation of the OpenAPI document, and nothing else', () => {
    const documented = Object.entries(loadOpenApi().paths).flatMap(([path, item]) =>
      Object.keys(item as object)
        .filter((key) => ['get', 'put', 'post', 'delete', 'patch'].includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.length).toBeGreaterThanOrEqual(operations.length);
    expect([...rendered.operations].sort()).toEqual([...documented].sort());
  });

  it('lists every route of the route table (a function nobody can find is not shipped)', () => {
    const shown = new Set(rendered.operations.map((entry) => routePath(entry)));
    for (const operation of operations) {
      expect(shown, operation.name).toContain(routePath(`${operation.method} ${operation.path}`));
    }
  });

  it('loads everything from its own origin, with no error or policy violation in the console', () => {
    expect(rendered.requests.length).toBeGreaterThanOrEqual(4);
    for (const url of rendered.requests) expect(new URL(url).origin, url).toBe(new URL(base).origin);
    expect(rendered.requests.some((url) => new URL(url).pathname === '/openapi.json')).toBe(true);
    expect(rendered.problems).toEqual([]);
  });
});

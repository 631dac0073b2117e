/**
 * The customer portal's use of the API from a browser: a page on another origin lists the
 * customer's wallets with a customer session token, in headless Chromium (Debian's `chromium`,
 * driven by playwright-core; `.ci/run` installs it when missing).
 *
 * The local API runs as `npm start` runs it, with one allowed origin. The page is served twice by
 * one server: from `http://127.0.0.1:<port>` (allowed) and from `http://localhost:<port>` (another
 * origin, not allowed), so the same script shows both what CORS lets through and what it stops.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '#scripts/local/stack.ts';
import { startLocalApi } from '../support/local-api.ts';

/** Debian's package; `CHROMIUM_PATH` for another install. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

let stack: LocalStack;
let pages: Server;
let browser: Browser;
let allowedOrigin: string;
let otherOrigin: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH`,
    );
  }
  pages = createServer((_, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>portal</title><p>customer portal</p>');
  });
  await new Promise<void>((done) => pages.listen(0, '127.0.0.1', done));
  const pagePort = (pages.address() as AddressInfo).port;
  allowedOrigin = `http://127.0.0.1:${pagePort}`;
  otherOrigin = `http://localhost:${pagePort}`;
  stack = await startLocalApi('cors', { corsAllowOrigins: [allowedOrigin] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking'],
  });
});
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  if (pages) await new Promise((done) => pages.close(done));
});

interface PageResult {
  ok: boolean;
  status?: number;
  items?: number;
  wwwAuthenticate?: string | null;
  error?: string;
}

/** Opens the page on `origin` and runs the portal's call there: List Wallets with a bearer token. */
async function fromPage(origin: string, token: string): Promise<PageResult> {
  const page = await browser.newPage();
  try {
    await page.goto(`${origin}/portal.html`);
    return await page.evaluate(
      async ({ url, token }) => {
        try {
          const reply = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
          const body = (await reply.json()) as { items?: unknown };
          return {
            ok: true,
            status: reply.status,
            items: Array.isArray(body.items) ? body.items.length : undefined,
            wwwAuthenticate: reply.headers.get('www-authenticate'),
          };
        } catch (error) {
          return { ok: false, error: String(error) };
        }
      },
      { url: `${stack.demo.base_url}/v1/customer-portal/wallets/?limit=3`, token },
    );
  } finally {
    await page.close();
  }
}

describe('List Wallets from a page on another origin', () => {
  it('an allowed origin reads the page of wallets (the Authorization header needs, and passes, a preflight)', async () => {
    const result = await fromPage(allowedOrigin, stack.demo.customer_session_token);
    expect(result).toEqual({ ok: true, status: 200, items: 3, wwwAuthenticate: null });
  });

  it("an allowed origin reads a 401's WWW-Authenticate (an exposed header)", async () => {
    const result = await fromPage(allowedOrigin, stack.demo.expired_customer_session_token);
    expect(result.status).toBe(401);
    expect(result.wwwAuthenticate).toMatch(/^Bearer /);
  });

  it('any other origin is stopped by the browser, token or not', async () => {
    const result = await fromPage(otherOrigin, stack.demo.customer_session_token);
    expect(result).toEqual({ ok: false, error: expect.stringMatching(/Failed to fetch/) });
  });
});

describe('the preflight, as the gateway answers it', () => {
  const preflight = (origin: string) =>
    fetch(`${stack.demo.base_url}/v1/customer-portal/wallets/`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });

  it('allows the origin, the method and Authorization, for a day, without credentials', async () => {
    const reply = await preflight(allowedOrigin);
    expect(reply.status).toBe(204);
    expect(reply.headers.get('access-control-allow-origin')).toBe(allowedOrigin);
    expect(reply.headers.get('access-control-allow-methods')?.split(',')).toContain('GET');
    expect(reply.headers.get('access-control-allow-headers')?.split(',')).toContain('authorization');
    expect(reply.headers.get('access-control-max-age')).toBe('86400');
    expect(reply.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('names no origin for one it does not allow', async () => {
    const reply = await preflight(otherOrigin);
    expect(reply.headers.get('access-control-allow-origin')).toBeNull();
  });
});

/**
 * `npm run smoke -- <base URL> [--origin https://portal.example.com]`: what a first real deployment
 * must confirm and the rehearsal cannot (moto has no API Gateway v2), without any credential:
 *
 * - every operation's path, in both spellings, reaches its function (which answers its own 401
 *   with `WWW-Authenticate`, Bearer or, where a client authenticates, Basic; not API Gateway's
 *   404): the routes and the `{proxy+}` twins work;
 * - a real extra segment is the contract's 404 (the twin's function refuses it before auth);
 * - an unknown path is the contract's 404 and a known path with another method its 405 with
 *   `Allow`: the `$default` route and its function work;
 * - a CORS preflight is answered by the gateway for the configured origin.
 *
 * Every check is derived from the route table, so a new operation is checked without editing this
 * file. Each prints the `curl` that reproduces it. Run against `npm start` it passes too
 * (test/e2e/smoke.test.ts), so a failure on AWS is AWS's routing, not the code's.
 */
import { fileURLToPath } from 'node:url';
import { operations } from '../shared/operations.ts';

export interface SmokeCheck {
  what: string;
  curl: string;
  ok: boolean;
  got: string;
}

/** A well-formed id for `{id}` segments (no such item exists: authentication fails first anyway). */
const SAMPLE_ID = '5a1c0e8e-8f0a-4c56-9d0b-7b1c2d3e4f50';
const concrete = (path: string) => path.replace(/\{\w+\}/g, SAMPLE_ID).replace(/\/$/, '');

async function probe(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: unknown; curl: string }> {
  const url = `${base.replace(/\/+$/, '')}${path}`;
  const response = await fetch(url, { method, headers, redirect: 'manual' });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {}
  const flags = Object.entries(headers)
    .map(([name, value]) => ` -H '${name}: ${value}'`)
    .join('');
  return {
    status: response.status,
    headers: response.headers,
    body,
    curl: `curl -si -X ${method}${flags} '${url}'`,
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const FORM = 'application/x-www-form-urlencoded';

export async function smokeChecks(base: string, origin = 'https://smoke.example'): Promise<SmokeCheck[]> {
  const checks: SmokeCheck[] = [];
  const check = (what: string, reply: Awaited<ReturnType<typeof probe>>, ok: boolean) =>
    checks.push({ what, curl: reply.curl, ok, got: `${reply.status} ${JSON.stringify(reply.body) ?? ''}` });

  for (const operation of operations) {
    const path = concrete(operation.path);
    for (const spelling of [path, `${path}/`]) {
      // Declared a form so that the endpoints a client authenticates at in the form (the token
      // endpoint…) reach their client authentication too: every function's first answer is its 401.
      const reply = await probe(base, operation.method, spelling, { 'content-type': FORM });
      check(
        `${operation.method} ${spelling} reaches ${operation.name} (its 401)`,
        reply,
        reply.status === 401 && /^(Bearer|Basic) /.test(reply.headers.get('www-authenticate') ?? ''),
      );
    }
    const extra = await probe(base, operation.method, `${path}/extra/more`);
    check(
      `${operation.method} ${path}/extra/more is the contract's 404`,
      extra,
      extra.status === 404 && same(extra.body, { error: 'NotFound', detail: 'Not Found' }),
    );
  }
  const unknown = await probe(base, 'GET', '/v1/no-such-route');
  check(
    "an unknown path is the contract's 404 ($default)",
    unknown,
    unknown.status === 404 && same(unknown.body, { error: 'NotFound', detail: 'Not Found' }),
  );
  const [first] = operations;
  // No operation uses PUT: it is a wrong method on every path.
  const wrongMethod = 'PUT';
  const wrong = await probe(base, wrongMethod, concrete(first.path));
  check(
    `${wrongMethod} ${concrete(first.path)} is the contract's 405 with Allow ($default)`,
    wrong,
    wrong.status === 405 && (wrong.headers.get('allow') ?? '').includes(first.method),
  );
  const listWallets = operations.find((operation) => operation.name === 'list-wallets') ?? first;
  const preflight = await probe(base, 'OPTIONS', concrete(listWallets.path), {
    origin,
    'access-control-request-method': listWallets.method,
    'access-control-request-headers': 'authorization',
  });
  const allowed = preflight.headers.get('access-control-allow-origin');
  check(
    `a CORS preflight from ${origin} is answered by the gateway`,
    preflight,
    preflight.status >= 200 &&
      preflight.status < 300 &&
      (allowed === '*' || allowed === origin) &&
      (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().includes('authorization'),
  );
  return checks;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [base, ...rest] = process.argv.slice(2);
  if (!base) {
    console.error('usage: npm run smoke -- <base URL> [--origin <an allowed origin>]');
    process.exit(2);
  }
  const originAt = rest.indexOf('--origin');
  const checks = await smokeChecks(base, originAt >= 0 ? rest[originAt + 1] : undefined);
  for (const c of checks) {
    console.log(`${c.ok ? '✔' : '✘'} ${c.what}${c.ok ? '' : `\n    got ${c.got}`}\n    ${c.curl}`);
  }
  const failed = checks.filter((c) => !c.ok).length;
  console.log(`\n${checks.length - failed} of ${checks.length} checks passed`);
  process.exit(failed === 0 ? 0 : 1);
}

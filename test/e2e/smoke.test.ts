/**
 * `npm run smoke`, the first-deployment check, against the local API: every check passes here, so a
 * failure on AWS points at API Gateway's routing. And against a server that answers like an HTTP API
 * without our routes (`{"message":"Not Found"}` for everything), it fails: the checks can fail.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smokeChecks } from '#scripts/smoke.ts';
import { operations } from '#shared/operations.ts';
import { sharedLocalApi } from '../support/local-api.ts';

let stack: ReturnType<typeof sharedLocalApi>;
let bare: Server;
beforeAll(async () => {
  stack = sharedLocalApi();
  bare = createServer((_, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"message":"Not Found"}');
  });
  await new Promise<void>((done) => bare.listen(0, '127.0.0.1', done));
});
afterAll(async () => {
  await stack?.stop();
  if (bare) await new Promise((done) => bare.close(done));
});

describe('npm run smoke', () => {
  it('passes every check against the local API: two spellings and an extra segment per operation, $default, CORS', async () => {
    const checks = await smokeChecks(stack.demo.base_url);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks).toHaveLength(operations.length * 3 + 3);
    for (const c of checks) expect(c.curl).toMatch(/^curl -si -X [A-Z]+ /);
  });

  it('fails them against a gateway without our routes', async () => {
    const checks = await smokeChecks(`http://127.0.0.1:${(bare.address() as AddressInfo).port}`);
    expect(checks.filter((c) => c.ok)).toEqual([]);
  });
});

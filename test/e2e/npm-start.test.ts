/**
 * `npm start` as a newcomer runs it: a separate process in a fresh directory,
 * which must print the banner, write .local/demo.json, serve the curl flows of
 * docs/local.md (Create Subscription, List Wallets), print one short line per request and per webhook attempt (stdout
 * is a pipe here: no colours), deliver the demo's webhooks to its own receiver
 * without a failed attempt, and leave no process behind after Ctrl-C (SIGINT).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '#scripts/local/dynamodb-local.ts';
import { waitFor as waitUntil } from '#test/support/wait.ts';

const root = resolve(import.meta.dirname, '../..');
const cwd = mkdtempSync(join(tmpdir(), 'npm-start-'));
let child: ChildProcess | undefined;

afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(cwd, { recursive: true, force: true });
});

function waitFor(process: ChildProcess, text: string, timeoutMs: number): Promise<string> {
  return new Promise((done, fail) => {
    let output = '';
    const timer = setTimeout(
      () => fail(new Error(`no "${text}" within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(text)) {
        clearTimeout(timer);
        done(output);
      }
    };
    process.stdout?.on('data', collect);
    process.stderr?.on('data', collect);
    process.on('exit', (code) => fail(new Error(`exited with ${code} before "${text}":\n${output}`)));
  });
}

const dynamoProcesses = (port: string) =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes('DynamoDBLocal') && line.includes(port));

it('serves the demo, writes .local/demo.json and stops cleanly on Ctrl-C', { timeout: 180_000 }, async () => {
  const port = await freePort();
  // As package.json's `start` runs it: one Node process with tsx's loader (`node --import tsx`), so Ctrl-C
  // reaches the script itself. tsx's CLI relays signals to a child and SIGKILLs it (exit 130, the
  // JVM left running) when the child does not answer within 60 ms, as happened on a loaded CI machine.
  // `tsx` resolved here, as npm resolves it in the project: the process runs in a fresh directory.
  child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), join(root, 'scripts/local/start.ts')],
    {
      cwd,
      env: { ...process.env, PORT: String(port), LOG_FORMAT: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let errors = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const banner = await waitFor(child, 'Ctrl-C stops', 150_000);
  // A newcomer's first screen has nothing on it they cannot act on (the SDK's Node 22 notice was).
  expect(errors).toBe('');
  expect(banner).toContain(`http://127.0.0.1:${port}`);

  const demo = JSON.parse(readFileSync(join(cwd, '.local/demo.json'), 'utf8'));
  expect(demo.base_url).toBe(`http://127.0.0.1:${port}`);
  expect(demo.personal_access_token).toMatch(/^polar_pat_/);
  expect(banner).toContain(demo.personal_access_token);

  const created = await fetch(`${demo.base_url}/v1/subscriptions/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${demo.personal_access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ product_id: demo.free_product_id, customer_id: demo.customer_id }),
  });
  expect(created.status).toBe(201);
  const listed = await fetch(`${demo.base_url}/v1/customer-portal/wallets/`, {
    headers: { authorization: `Bearer ${demo.customer_session_token}` },
  });
  expect(listed.status).toBe(200);

  // One plain line per request: time, method, path, status, ms, the function that answered.
  const time = String.raw`\d\d:\d\d:\d\d\.\d{3}`;
  await waitUntil(() => /GET +\/v1\/customer-portal\/wallets\//.test(output), 30_000, 'the request lines');
  expect(output).toMatch(
    new RegExp(`^${time} POST   /v1/subscriptions/ 201 \\d+\\.\\d ms create-subscription$`, 'm'),
  );
  expect(output).toMatch(
    new RegExp(`^${time} GET    /v1/customer-portal/wallets/ 200 \\d+\\.\\d ms list-wallets$`, 'm'),
  );
  expect(output).not.toContain('\u001b[');
  expect(output).not.toMatch(/"_aws"|"level":/);
  // The subscription's event reaches every demo endpoint subscribed to it, at the demo's own receiver,
  // which verified it (204) at the first attempt; no attempt of a fresh start fails or retries.
  const delivered = () =>
    output.match(
      new RegExp(`^${time} WEBHOOK subscription\\.created → endpoint \\S+ attempt 1 204 delivered`, 'gm'),
    ) ?? [];
  await waitUntil(
    () => delivered().length >= demo.webhook_endpoint_ids.length,
    60_000,
    'the demo deliveries',
  );
  expect(output).not.toMatch(/ (retry|failed) \d/);
  expect(errors).toBe('');

  const dbPort = new URL(demo.dynamodb_endpoint).port;
  expect(dynamoProcesses(dbPort)).toHaveLength(1);
  const exited = new Promise<number | null>((done) => child?.on('exit', (code) => done(code)));
  child.kill('SIGINT');
  expect(await exited).toBe(0);
  // The JVM is stopped before the runner exits; give the kernel a moment to reap it.
  for (let i = 0; i < 20 && dynamoProcesses(dbPort).length > 0; i++)
    await new Promise((r) => setTimeout(r, 250));
  expect(dynamoProcesses(dbPort)).toEqual([]);
});

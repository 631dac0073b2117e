/**
 * One delivery attempt against real HTTP servers on loopback (no database): exact bytes and headers, bounded
 * snippets, no redirect followed, a deadline, and the address guard applied to the address the
 * socket connects to (so DNS cannot swap it after the check).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { deliveryHeaders } from '#shared/domain/webhook-signature.ts';
import { addressGuard, portAllowed } from '#shared/webhooks/address-guard.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_SECONDS, retryDelaySeconds } from '#shared/webhooks/retry.ts';
import { guardedLookup, SNIPPET_BYTES, sendAttempt } from '#shared/webhooks/send.ts';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function receiver(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks`, received };
}

const loopbackAllowed = () => true;
const payload = JSON.stringify({
  type: 'customer.created',
  timestamp: '2026-11-24T10:00:00.000Z',
  data: { id: 'x' },
});

describe('sendAttempt', () => {
  it('POSTs the exact payload with its signed headers; the receiver verifies it', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const { url, received } = await receiver((_, res) => res.writeHead(204).end());
    const headers = deliveryHeaders({ id: 'evt-1', timestamp: Math.floor(Date.now() / 1000), payload }, [
      secret,
    ]);
    const attempt = await sendAttempt(url, headers, payload, { guard: loopbackAllowed });
    expect(attempt).toMatchObject({ status: 204, delivered: true, error: null, snippet: '' });
    expect(received).toHaveLength(1);
    expect(received[0]?.body).toBe(payload);
    expect(received[0]?.headers['content-type']).toBe('application/json');
    expect(() =>
      new Webhook(secret).verify(received[0]?.body as string, received[0]?.headers as Record<string, string>),
    ).not.toThrow();
  });

  it('keeps a bounded snippet of the answer, and a non-2xx is not delivered', async () => {
    const { url } = await receiver((_, res) => res.writeHead(500).end('x'.repeat(50_000)));
    const attempt = await sendAttempt(url, {}, payload, { guard: loopbackAllowed });
    expect(attempt).toMatchObject({ status: 500, delivered: false, error: null });
    expect(Buffer.byteLength(attempt.snippet)).toBe(SNIPPET_BYTES);
  });

  it('follows no redirect: a 3xx is a failed attempt and its Location is never called', async () => {
    const elsewhere = await receiver((_, res) => res.writeHead(200).end());
    const { url } = await receiver((_, res) => res.writeHead(307, { location: elsewhere.url }).end());
    const attempt = await sendAttempt(url, {}, payload, { guard: loopbackAllowed });
    expect(attempt).toMatchObject({ status: 307, delivered: false });
    expect(elsewhere.received).toEqual([]);
  });

  it('gives up at its deadline', async () => {
    const { url } = await receiver(() => {
      // Never answers.
    });
    const attempt = await sendAttempt(url, {}, payload, { guard: loopbackAllowed, timeoutMs: 300 });
    expect(attempt).toMatchObject({
      status: null,
      delivered: false,
      error: 'no answer',
      cause: 'timeout after 300 ms',
    });
    expect(attempt.durationMs).toBeGreaterThanOrEqual(290);
    expect(attempt.durationMs).toBeLessThan(2000);
  });

  it('refuses an address the guard refuses, before any byte is sent', async () => {
    const { url, received } = await receiver((_, res) => res.writeHead(200).end());
    const attempt = await sendAttempt(url.replace('127.0.0.1', 'localhost'), {}, payload, {
      guard: (address) => !address.startsWith('127.') && address !== '::1',
    });
    expect(attempt).toMatchObject({ status: null, delivered: false, error: 'address refused' });
    expect(received).toEqual([]);
  });

  it('checks what DNS answers at send time: a name now resolving to the metadata service is refused', async () => {
    const { url, received } = await receiver((_, res) => res.writeHead(200).end());
    const port = new URL(url).port;
    const rebinding = guardedLookup((address) => address !== '169.254.169.254', ((
      _host: string,
      _options: unknown,
      callback: (e: null, a: { address: string; family: number }[]) => void,
    ) => callback(null, [{ address: '169.254.169.254', family: 4 }])) as never);
    const attempt = await sendAttempt(`http://hooks.example:${port}/`, {}, payload, {
      guard: () => true,
      lookup: rebinding,
    });
    expect(attempt.error).toBe('address refused');
    expect(received).toEqual([]);
  });

  it('by default applies the guard endpoints were saved under: loopback refused, literal addresses included (no lookup runs for them)', async () => {
    const { url, received } = await receiver((_, res) => res.writeHead(200).end());
    const port = new URL(url).port;
    for (const target of [url, `http://localhost:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`]) {
      expect((await sendAttempt(target, {}, payload)).error, target).toBe('address refused');
    }
    // The local allowance, as npm start passes it, reaches the same receiver.
    expect(
      await sendAttempt(url, {}, payload, { guard: addressGuard({ allowLoopback: true }) }),
    ).toMatchObject({
      status: 200,
      delivered: true,
    });
    expect(received).toHaveLength(1);
  });

  it('an unreachable port is a failed attempt with a reason, not an exception', async () => {
    const { url } = await receiver((_, res) => res.writeHead(200).end());
    await new Promise((resolve) => servers.splice(0)[0]?.close(resolve));
    const attempt = await sendAttempt(url, {}, payload, { guard: loopbackAllowed });
    // The public reason is the timeout's: a closed port and a silent one read the same.
    expect(attempt).toMatchObject({
      status: null,
      delivered: false,
      error: 'no answer',
      cause: 'ECONNREFUSED',
    });
  });

  it('a port allowPort refuses is never connected to', async () => {
    let reached = 0;
    const { url } = await receiver((_, res) => {
      reached++;
      res.writeHead(200).end();
    });
    const attempt = await sendAttempt(url, {}, payload, {
      guard: loopbackAllowed,
      allowPort: (target) => portAllowed(target),
    });
    expect(attempt).toMatchObject({ status: null, delivered: false, error: 'address refused' });
    expect(reached).toBe(0);
  });
});

describe('the retry ladder', () => {
  it('retries within seconds first, then further apart, up to 12 h, and stops after the last attempt', () => {
    expect(MAX_ATTEMPTS).toBe(10);
    const lowest = RETRY_DELAYS_SECONDS.map((_, i) => retryDelaySeconds(i + 1, () => 0));
    const highest = RETRY_DELAYS_SECONDS.map((_, i) => retryDelaySeconds(i + 1, () => 1));
    expect(highest).toEqual([...RETRY_DELAYS_SECONDS]);
    expect(lowest).toEqual(RETRY_DELAYS_SECONDS.map((s) => Math.max(1, Math.round(s / 2))));
    expect(highest[0]).toBeLessThanOrEqual(5);
    expect(Math.max(...(highest as number[]))).toBe(43_200);
    for (let i = 1; i < highest.length; i++)
      expect(highest[i] as number).toBeGreaterThan(highest[i - 1] as number);
    expect(retryDelaySeconds(MAX_ATTEMPTS)).toBeNull();
    const total = (highest as number[]).reduce((a, b) => a + b, 0) / 3600;
    expect(total).toBeGreaterThan(20);
    expect(total).toBeLessThan(24);
  });
});

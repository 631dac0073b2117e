/** A webhook receiver on loopback: records every delivery, answers as told. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

type Reply = number | { status: number; body: string };

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Status (and body) of the answer to the n-th delivery (0-based), or a promise of it; default 204. */
  answer: (n: number) => Reply | Promise<Reply>;
  close(): Promise<void>;
}

export async function startReceiver(answer: Receiver['answer'] = () => 204): Promise<Receiver> {
  const receiver: Receiver = { url: '', deliveries: [], answer, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const n = receiver.deliveries.length;
      receiver.deliveries.push({
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const reply = await receiver.answer(n);
      const { status, body } = typeof reply === 'number' ? { status: reply, body: '' } : reply;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return receiver;
}

/** Starts receivers for a test file, each closed after the test that started it. */
export function receiversClosedAfterEach(): (answer?: Receiver['answer']) => Promise<Receiver> {
  const open: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()));
  });
  return async (answer) => {
    const started = await startReceiver(answer);
    open.push(started);
    return started;
  };
}

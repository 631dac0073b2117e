/**
 * The receiver of the demo's webhook endpoints, on loopback inside the `npm start` process: each demo
 * endpoint points at one of its paths, and it verifies every delivery's signature (Standard Webhooks,
 * with the endpoint's own secrets, as a receiver would) before it answers 204; a delivery it cannot
 * verify gets 400. Without it the demo endpoints pointed at a name that never resolves, and every
 * event of the demo failed in the background, attempt after attempt.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface DemoReceiver {
  /** `http://127.0.0.1:<port>`; an endpoint's URL is this and its path (`/demo/1`). */
  url: string;
  port: number;
  /** Deliveries verified and refused so far. */
  counts: { verified: number; refused: number };
  stop(): Promise<void>;
}

export interface DemoReceiverOptions {
  host?: string;
  /** The port to listen on (a restart over kept data keeps its endpoints' URLs); 0 or absent: any free one. */
  port?: number;
  /** The secrets that may sign a delivery to a path (an endpoint's secret, and a reset one's while it lasts). */
  secretsFor(path: string): Promise<string[]>;
  /** Each delivery: which path, its verdict, its event type. */
  onDelivery?: (delivery: { path: string; verified: boolean; type?: string; reason?: string }) => void;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done();
    });
  });
}

export async function startDemoReceiver(options: DemoReceiverOptions): Promise<DemoReceiver> {
  const host = options.host ?? '127.0.0.1';
  const counts = { verified: 0, refused: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] as string;
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      void (async () => {
        const secrets = await options.secretsFor(path);
        if (secrets.length === 0) throw new Error(`no demo endpoint at ${path}`);
        let lastError: unknown;
        for (const secret of secrets) {
          try {
            const event = new Webhook(secret).verify(body, headers) as { type?: string };
            return event.type;
          } catch (error) {
            lastError = error;
          }
        }
        throw lastError;
      })().then(
        (type) => {
          counts.verified++;
          options.onDelivery?.({ path, verified: true, ...(type ? { type } : {}) });
          res.writeHead(204).end();
        },
        (error: unknown) => {
          counts.refused++;
          options.onDelivery?.({ path, verified: false, reason: (error as Error).message });
          res.writeHead(400).end();
        },
      );
    });
  });
  await listen(server, options.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    counts,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

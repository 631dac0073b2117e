/**
 * A loopback proxy in front of DynamoDB Local that enforces the stack's IAM policies, because
 * DynamoDB Local enforces none: Create Subscription once passed every local test and would have
 * failed its first request on AWS with AccessDeniedException.
 *
 * Why a proxy and not a middleware on the SDK client: it judges the exact requests that go over
 * the wire, as DynamoDB does, whatever code sent them — handlers in process (tests, `npm start`),
 * bundled handlers in other processes (the SAM contract tests, on the Lambda runtime's Node; `sam
 * local` in Docker), or anything that builds its own client.
 *
 * Each function gets its own port, and its client (or its `AWS_ENDPOINT_URL_DYNAMODB`) points
 * there: the port is the caller's identity, standing in for the role credentials that identify a
 * function on AWS. Ports rather than access keys, because `sam local` passes the developer's own
 * credentials to every function but lets an env-vars file give each function its own endpoint.
 * Operator tools (seed, admin CLI, test assertions) talk to DynamoDB Local directly, as an
 * administrator would.
 *
 * Allowed requests are forwarded unchanged and the answer streamed back; a refused one gets the
 * error DynamoDB sends (`AccessDeniedException`, HTTP 400, JSON 1.0 protocol).
 */
import { randomUUID } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createIamJudge, type IamJudge, type IamJudgeOptions, type Verdict } from './judge.ts';

export { LOCAL_ACCOUNT_ID, LOCAL_PARTITION, resolvedStatements, type Verdict } from './judge.ts';

export interface IamProxyOptions extends IamJudgeOptions {
  /** DynamoDB Local's endpoint. */
  upstream: string;
  host?: string;
}

export interface IamProxy {
  /** The endpoint a function's client must use: DynamoDB as that function's role sees it. */
  endpointFor(functionName: string): string;
  /** By function name. */
  endpoints: Record<string, string>;
  /** Refusals so far, newest last (the proxy's and those of in-process clients judged by `judge`). */
  denials: Verdict[];
  /** The judge the proxy uses: in-process clients (`judgingRequestHandler`) share it. */
  judge: IamJudge;
  stop(): Promise<void>;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => done(Buffer.concat(chunks)));
    req.once('error', fail);
  });
}

export async function startIamProxy(options: IamProxyOptions): Promise<IamProxy> {
  const iam = createIamJudge(options);
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });
  const host = options.host ?? '127.0.0.1';

  function serve(name: string): Server {
    return createServer((req, res) => {
      void (async () => {
        const body = await readAll(req);
        const refusal = iam.judge(name, String(req.headers['x-amz-target'] ?? ''), body);
        if (refusal) {
          res.writeHead(refusal.status, {
            'content-type': 'application/x-amz-json-1.0',
            'x-amzn-requestid': randomUUID(),
            'content-length': Buffer.byteLength(refusal.body),
          });
          res.end(refusal.body);
          return;
        }
        const forwarded = request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, host: upstream.host },
            agent,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        // As a dropped connection: the SDK retries it like any network failure.
        forwarded.once('error', (error) => res.destroy(error));
        forwarded.end(body);
      })().catch((error: unknown) => {
        console.error('IAM proxy failed on a request:', error);
        res.destroy();
      });
    });
  }

  const servers: Server[] = [];
  const endpoints: Record<string, string> = {};
  const stop = async () => {
    agent.destroy();
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      ),
    );
  };
  try {
    for (const name of Object.keys(options.policies.functions)) {
      const server = serve(name);
      servers.push(server);
      await new Promise<void>((done, fail) => {
        server.once('error', fail);
        server.listen(0, host, () => {
          server.off('error', fail);
          done();
        });
      });
      endpoints[name] = `http://${host}:${(server.address() as AddressInfo).port}`;
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    endpoints,
    endpointFor: (name) => {
      const endpoint = endpoints[name];
      if (!endpoint) throw new Error(`the stack has no function named ${name}`);
      return endpoint;
    },
    denials: iam.denials,
    judge: iam,
    stop,
  };
}

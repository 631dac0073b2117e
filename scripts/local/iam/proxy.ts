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
import { tableDefinition } from '#shared/data/table.ts';
import {
  type Decision,
  decide,
  type KeySchema,
  type RequestContext,
  type ResolvedStatement,
  requestContexts,
  UnsupportedRequest,
} from './evaluate.ts';
import { type ResolveContext, resolve, type StackPolicies, tableArn } from './policy.ts';

export const LOCAL_ACCOUNT_ID = '123456789012';
export const LOCAL_PARTITION = 'aws';

export interface Verdict {
  functionName: string;
  target: string;
  context: RequestContext;
  decision: Decision;
}

export interface IamProxyOptions {
  /** DynamoDB Local's endpoint. */
  upstream: string;
  tableName: string;
  policies: StackPolicies;
  region: string;
  host?: string;
  /** Every authorisation decision (allowed or not), e.g. to see which grants a run used. */
  onVerdict?: (verdict: Verdict) => void;
}

export interface IamProxy {
  /** The endpoint a function's client must use: DynamoDB as that function's role sees it. */
  endpointFor(functionName: string): string;
  /** By function name. */
  endpoints: Record<string, string>;
  /** Refusals so far, newest last. */
  denials: Verdict[];
  stop(): Promise<void>;
}

const keySchema: KeySchema = {
  partitionKey: tableDefinition.partitionKey.name,
  indexPartitionKeys: Object.fromEntries(
    tableDefinition.indexes.map((index) => [index.name, index.partitionKey.name]),
  ),
};

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => done(Buffer.concat(chunks)));
    req.once('error', fail);
  });
}

function awsError(type: string, message: string) {
  return {
    status: 400,
    body: JSON.stringify({ __type: `com.amazon.coral.service#${type}`, message }),
  };
}

const localResolveContext = (policies: StackPolicies, tableName: string, region: string): ResolveContext => ({
  region,
  accountId: LOCAL_ACCOUNT_ID,
  partition: LOCAL_PARTITION,
  tableLogicalId: policies.tableLogicalId,
  tableName,
});

/**
 * The statements a function's requests are judged by: its policy resolved against a concrete table.
 * Pure, and the proxy's own: `decide()` over these judges a recorded request context offline exactly
 * as the proxy judged it live (the IAM suite's "no more than needed" check does so under mutated
 * policies, without re-running any handler).
 */
export function resolvedStatements(
  policies: StackPolicies,
  functionName: string,
  table: { tableName: string; region: string },
): ResolvedStatement[] {
  const fn = policies.functions[functionName];
  if (!fn) throw new Error(`the stack has no function named ${functionName}`);
  const context = localResolveContext(policies, table.tableName, table.region);
  return fn.statements.map((s) => ({ ...s, Resource: resolve(s.Resource, context) }));
}

export async function startIamProxy(options: IamProxyOptions): Promise<IamProxy> {
  const resolveContext = localResolveContext(options.policies, options.tableName, options.region);
  const arnOf = (table: string) => (table.startsWith('arn:') ? table : tableArn(resolveContext, table));
  const upstream = new URL(options.upstream);
  const agent = new Agent({ keepAlive: true });
  const denials: Verdict[] = [];
  const host = options.host ?? '127.0.0.1';

  interface Role {
    name: string;
    role: string;
    statements: ResolvedStatement[];
  }

  /** Undefined when every context is allowed; else the error DynamoDB would answer. */
  function judge(fn: Role, target: string, body: Buffer) {
    let contexts: RequestContext[];
    try {
      contexts = requestContexts(target, JSON.parse(body.toString('utf8') || '{}'), arnOf, keySchema);
    } catch (error) {
      if (error instanceof UnsupportedRequest || error instanceof SyntaxError) {
        return awsError('ValidationException', `IAM simulator cannot judge this request: ${error.message}`);
      }
      throw error;
    }
    for (const context of contexts) {
      const decision = decide(fn.statements, context);
      const verdict: Verdict = { functionName: fn.name, target, context, decision };
      options.onVerdict?.(verdict);
      if (!decision.allowed) {
        denials.push(verdict);
        const principal = `arn:${LOCAL_PARTITION}:sts::${LOCAL_ACCOUNT_ID}:assumed-role/${fn.role}/${fn.name}`;
        const why = decision.explicit
          ? 'with an explicit deny in an identity-based policy'
          : `because no identity-based policy allows the ${context.action} action`;
        return awsError(
          'AccessDeniedException',
          `User: ${principal} is not authorized to perform: ${context.action} on resource: ${context.resource} ${why}`,
        );
      }
    }
    return undefined;
  }

  function serve(fn: Role): Server {
    return createServer((req, res) => {
      void (async () => {
        const body = await readAll(req);
        const refusal = judge(fn, String(req.headers['x-amz-target'] ?? ''), body);
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
    for (const [name, fn] of Object.entries(options.policies.functions)) {
      const server = serve({
        name,
        role: fn.roleLogicalId,
        statements: resolvedStatements(options.policies, name, options),
      });
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
    denials,
    stop,
  };
}

/**
 * AWS X-Ray subsegments for DynamoDB calls, sent to the X-Ray daemon that Lambda runs beside a
 * function with active tracing. Lambda records the function's own segment; this adds one
 * subsegment per DynamoDB call (operation, table, request id, status, retries), so a trace shows
 * where a request spent its time.
 *
 * Why not the X-Ray SDK (or Powertools Tracer, which wraps it): the SDK and its dependencies
 * weigh more than all of our own code, and its work happens at cold start. The daemon's protocol
 * is one UDP datagram per document (a JSON header line, then the segment document), documented by
 * AWS; sending it needs `node:dgram` and a few lines. Nothing is sent when the invocation is not
 * sampled, when no daemon address is set (local runs, tests), or for a trace header we cannot read.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:dgram';

export const TRACE_HEADER_ENV = '_X_AMZN_TRACE_ID';
export const DAEMON_ADDRESS_ENV = 'AWS_XRAY_DAEMON_ADDRESS';

export interface TraceContext {
  traceId: string;
  parentId: string;
}

/** `Root=1-…;Parent=…;Sampled=1` → the ids, or undefined when not sampled or not readable. */
export function traceContext(header: string | undefined): TraceContext | undefined {
  if (!header) return undefined;
  const fields = new Map(
    header.split(';').map((part) => {
      const equals = part.indexOf('=');
      return [part.slice(0, equals).trim(), part.slice(equals + 1).trim()] as const;
    }),
  );
  const traceId = fields.get('Root');
  const parentId = fields.get('Parent');
  if (fields.get('Sampled') !== '1' || !traceId || !parentId) return undefined;
  if (!/^1-[0-9a-f]{8}-[0-9a-f]{24}$/.test(traceId) || !/^[0-9a-f]{16}$/.test(parentId)) return undefined;
  return { traceId, parentId };
}

/** `host:port` (Lambda also sends `tcp:… udp:…`, where the UDP address is the one for segments). */
export function daemonAddress(value: string | undefined): { host: string; port: number } | undefined {
  if (!value) return undefined;
  const udp = value.split(/\s+/).find((part) => part.startsWith('udp:'));
  const address = udp ? udp.slice(4) : value.split(/\s+/)[0];
  const colon = address?.lastIndexOf(':') ?? -1;
  if (!address || colon < 1) return undefined;
  const port = Number(address.slice(colon + 1));
  return Number.isInteger(port) && port > 0 && port < 65_536
    ? { host: address.slice(0, colon), port }
    : undefined;
}

export interface DynamoCall {
  operation: string;
  tableName: string | undefined;
  region: string | undefined;
  startedAt: number;
  endedAt: number;
  requestId: string | undefined;
  statusCode: number | undefined;
  retries: number;
  /** The SDK's error name, when the call failed. */
  error?: string;
}

const HEADER = '{"format":"json","version":1}\n';
let socket: Socket | undefined;

/** The subsegment document of one call (epoch seconds, as X-Ray wants them). */
export function subsegment(call: DynamoCall, trace: TraceContext): Record<string, unknown> {
  const status = call.statusCode;
  const throttled =
    call.error === 'ThrottlingException' || call.error === 'ProvisionedThroughputExceededException';
  return {
    type: 'subsegment',
    name: 'DynamoDB',
    namespace: 'aws',
    id: randomBytes(8).toString('hex'),
    trace_id: trace.traceId,
    parent_id: trace.parentId,
    start_time: call.startedAt / 1000,
    end_time: call.endedAt / 1000,
    aws: {
      operation: call.operation,
      table_name: call.tableName,
      region: call.region,
      request_id: call.requestId,
      retries: call.retries,
    },
    ...(status !== undefined ? { http: { response: { status } } } : {}),
    ...(call.error
      ? status !== undefined && status < 500 && !throttled
        ? { error: true }
        : { fault: true, ...(throttled ? { throttle: true } : {}) }
      : {}),
  };
}

/** Sends one DynamoDB call's subsegment, if this invocation is traced. Never throws, never waits. */
export function traceDynamoCall(call: DynamoCall, env: NodeJS.ProcessEnv = process.env): void {
  const trace = traceContext(env[TRACE_HEADER_ENV]);
  const daemon = daemonAddress(env[DAEMON_ADDRESS_ENV]);
  if (!trace || !daemon) return;
  try {
    if (!socket) {
      // Loaded on the first traced call, not at cold start: most invocations are not sampled.
      const dgram = process.getBuiltinModule('node:dgram') as typeof import('node:dgram');
      socket = dgram.createSocket('udp4');
      socket.on('error', () => {});
      // Never keep a finishing process alive for telemetry.
      socket.unref();
    }
    socket.send(`${HEADER}${JSON.stringify(subsegment(call, trace))}`, daemon.port, daemon.host);
  } catch {
    // Tracing must never fail a request.
  }
}

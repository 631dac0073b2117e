/**
 * One structured JSON line per request, which is also its CloudWatch embedded-metric-format (EMF)
 * document: CloudWatch Logs extracts the metrics named under `_aws` from the same line an operator
 * reads, so a request costs one write to stdout and no API call.
 *
 * Why not Powertools Logger and Metrics: measured here (21 interleaved fresh imports of minified
 * esbuild bundles, medians), Logger alone adds 23 kB and about 9 ms of module initialisation to an
 * empty bundle; this file and `xray.ts` add 3.8 kB and about 0.4 ms beyond `node:crypto`, which every
 * function loads anyway. The floor (a bundle that only builds the DynamoDB client) initialised in
 * 50–55 ms on that machine (25–26 ms on a quicker one), so Logger alone would take most or all of
 * the cold-start budget (≤ 1.25× the floor: 6–14 ms over it).
 *
 * The request's counters live in an AsyncLocalStorage scope, so the DynamoDB client's middleware
 * (`countDynamoCall`) and services (`countBusinessEvent`) add to the right request even when one
 * process serves several at once (the in-process tests, `npm start`).
 *
 * Never logged: tokens, secrets, bodies, metadata, item keys or values, query strings.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const LOG_LEVEL_ENV = 'LOG_LEVEL';
export const METRICS_NAMESPACE_ENV = 'METRICS_NAMESPACE';

/** `LOG_LEVEL` (debug, info, warn, error; default info). Below info, request lines carry metrics only. */
export function logLevel(): LogLevel {
  const value = (process.env[LOG_LEVEL_ENV] ?? 'info').toLowerCase();
  return value in LEVELS ? (value as LogLevel) : 'info';
}

const enabled = (level: LogLevel) => LEVELS[level] >= LEVELS[logLevel()];

export const SERVICE = 'commerce-api';
/** The stack gives each stage its own metrics namespace. */
export const metricsNamespaceOf = (stage: string) => `CommerceApi/${stage}`;
/** `METRICS_NAMESPACE`, set per stage by the stack; `CommerceApi/local` elsewhere. */
export const metricsNamespace = () => process.env[METRICS_NAMESPACE_ENV] ?? metricsNamespaceOf('local');

/** Business events a request can count (metric names). */
/** Business events counted per request (EMF metrics); the prod dashboard graphs each (infra/monitoring.ts). */
export const BUSINESS_EVENTS = [
  'SubscriptionsCreated',
  'CustomerSessionsCreated',
  'OAuthClientsRegistered',
  'CustomersCreated',
  'ProductsCreated',
  'OAuthTokensIssued',
  /** Refresh token replays (reuse detection) and refresh token revocations. */
  'OAuthTokenFamiliesRevoked',
] as const;
export type BusinessEvent = (typeof BUSINESS_EVENTS)[number];

export interface RequestTelemetry {
  roundTrips: number;
  readUnits: number;
  writeUnits: number;
  idempotentReplay: boolean;
  errorType?: string;
  business: Partial<Record<BusinessEvent, number>>;
  /**
   * API Gateway's request id: the correlation id a change's webhook events carry (`outboxWrites`),
   * which the relay and the deliverer log with each event, so one id follows a change to its receiver.
   */
  requestId?: string;
}

const scope = new AsyncLocalStorage<RequestTelemetry>();

/** One log line as an object: what `JSON.stringify` writes to stdout (stderr for errors). */
export type LogLine = Record<string, unknown>;
export type LineSink = (line: LogLine, stream: 'stdout' | 'stderr') => void;

/**
 * Deployed (and by default everywhere): each line is written as one JSON line, which CloudWatch Logs
 * reads. A local runner that shows the lines to a person (`npm start`: scripts/local/terminal.ts) may
 * take them as objects instead; nothing deployed sets a sink.
 */
let sink: LineSink | undefined;

/** For local runners only: where lines go instead of stdout/stderr as JSON; undefined restores that. */
export function setLineSink(next: LineSink | undefined): void {
  sink = next;
}

function writeLine(line: LogLine, stream: 'stdout' | 'stderr' = 'stdout'): void {
  if (sink) sink(line, stream);
  else if (stream === 'stderr') console.error(JSON.stringify(line));
  else console.log(JSON.stringify(line));
}

export function inRequestScope<T>(
  work: () => Promise<T>,
  requestId?: string,
): {
  telemetry: RequestTelemetry;
  result: Promise<T>;
} {
  const telemetry: RequestTelemetry = {
    roundTrips: 0,
    readUnits: 0,
    writeUnits: 0,
    idempotentReplay: false,
    business: {},
    ...(requestId ? { requestId } : {}),
  };
  return { telemetry, result: scope.run(telemetry, work) };
}

export const currentTelemetry = (): RequestTelemetry | undefined => scope.getStore();

/** The low-level command names the middleware sees (the document client wraps these). */
const READS = new Set([
  'GetItemCommand',
  'BatchGetItemCommand',
  'QueryCommand',
  'ScanCommand',
  'TransactGetItemsCommand',
]);

interface Consumed {
  CapacityUnits?: number;
}

/** Adds one DynamoDB round trip and the capacity it consumed to the current request. */
export function countDynamoCall(
  commandName: string,
  output: { ConsumedCapacity?: Consumed | Consumed[] },
): void {
  const telemetry = scope.getStore();
  if (!telemetry) return;
  telemetry.roundTrips++;
  const consumed = output.ConsumedCapacity;
  const units = (Array.isArray(consumed) ? consumed : consumed ? [consumed] : []).reduce(
    (sum, entry) => sum + (entry.CapacityUnits ?? 0),
    0,
  );
  if (READS.has(commandName)) telemetry.readUnits += units;
  else telemetry.writeUnits += units;
}

export function countBusinessEvent(event: BusinessEvent, count = 1): void {
  const telemetry = scope.getStore();
  if (telemetry) telemetry.business[event] = (telemetry.business[event] ?? 0) + count;
}

export function markIdempotentReplay(): void {
  const telemetry = scope.getStore();
  if (telemetry) telemetry.idempotentReplay = true;
}

export function markError(errorType: string): void {
  const telemetry = scope.getStore();
  if (telemetry) telemetry.errorType = errorType;
}

export interface RequestFacts {
  operation: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  coldStart: boolean;
  /** API Gateway's request id (`requestContext.requestId`), the one clients and access logs see. */
  requestId: string | undefined;
  /** Lambda's invocation id. */
  awsRequestId: string | undefined;
  principalKind: string | undefined;
  organizationIds: readonly string[] | undefined;
}

const round = (value: number) => Math.round(value * 1000) / 1000;

/** The request line: the log fields, and the EMF block naming which of them are metrics. */
export function requestLine(facts: RequestFacts, telemetry: RequestTelemetry): Record<string, unknown> {
  const status = facts.status;
  const errorClass = status >= 500 ? '5xx' : status >= 400 ? '4xx' : undefined;
  const metrics: { Name: string; Unit: string }[] = [
    { Name: 'Requests', Unit: 'Count' },
    { Name: 'Latency', Unit: 'Milliseconds' },
    { Name: 'Errors4xx', Unit: 'Count' },
    { Name: 'Errors5xx', Unit: 'Count' },
    { Name: 'ColdStarts', Unit: 'Count' },
    { Name: 'IdempotentReplays', Unit: 'Count' },
    { Name: 'DynamoDBRoundTrips', Unit: 'Count' },
    { Name: 'DynamoDBReadUnits', Unit: 'Count' },
    { Name: 'DynamoDBWriteUnits', Unit: 'Count' },
    ...Object.keys(telemetry.business).map((name) => ({ Name: name, Unit: 'Count' })),
  ];
  const dimensions: string[][] = [['service'], ['service', 'operation']];
  if (errorClass) dimensions.push(['service', 'operation', 'error_type']);
  return {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [{ Namespace: metricsNamespace(), Dimensions: dimensions, Metrics: metrics }],
    },
    service: SERVICE,
    operation: facts.operation,
    ...(errorClass ? { error_type: telemetry.errorType ?? 'Unknown' } : {}),
    Requests: 1,
    Latency: round(facts.durationMs),
    Errors4xx: errorClass === '4xx' ? 1 : 0,
    Errors5xx: errorClass === '5xx' ? 1 : 0,
    ColdStarts: facts.coldStart ? 1 : 0,
    IdempotentReplays: telemetry.idempotentReplay ? 1 : 0,
    DynamoDBRoundTrips: telemetry.roundTrips,
    DynamoDBReadUnits: round(telemetry.readUnits),
    DynamoDBWriteUnits: round(telemetry.writeUnits),
    ...telemetry.business,
  };
}

/** Writes the request line: with its log fields at `info` and above, as a bare metrics document below. */
export function emitRequest(facts: RequestFacts, telemetry: RequestTelemetry): void {
  const line = requestLine(facts, telemetry);
  if (!enabled('info')) {
    writeLine(line);
    return;
  }
  writeLine({
    level: 'info',
    message: 'request',
    timestamp: new Date().toISOString(),
    ...line,
    method: facts.method,
    route: facts.route,
    status: facts.status,
    duration_ms: round(facts.durationMs),
    cold_start: facts.coldStart,
    request_id: facts.requestId,
    aws_request_id: facts.awsRequestId,
    principal_kind: facts.principalKind ?? null,
    organization_ids: facts.organizationIds ?? null,
    dynamodb: {
      round_trips: telemetry.roundTrips,
      read_units: round(telemetry.readUnits),
      write_units: round(telemetry.writeUnits),
    },
  });
}

/** An error line (5xx causes, denied DynamoDB calls): always written, with the request's ids. */
export function logError(message: string, fields: Record<string, unknown>): void {
  if (!enabled('error')) return;
  writeLine({ level: 'error', message, timestamp: new Date().toISOString(), ...fields }, 'stderr');
}

/** A line of a function that serves no request (the subscription clock's run): its facts, at `info`. */
export function logInfo(message: string, fields: Record<string, unknown>): void {
  if (!enabled('info')) return;
  writeLine({ level: 'info', message, timestamp: new Date().toISOString(), ...fields });
}

/** The deliverer's metrics (`DeliveryAttempts`, `DeliveryFailures`), dimension `service`: the prod failure-rate alarm reads them. */
export const DELIVERY_METRICS = { attempts: 'DeliveryAttempts', failures: 'DeliveryFailures' } as const;

/** The deliverer's business metrics: events delivered, events given up, endpoints it disabled. */
export const WEBHOOK_METRICS = {
  succeeded: 'WebhookDeliveriesSucceeded',
  failed: 'WebhookDeliveriesFailed',
  disabled: 'WebhookEndpointsDisabled',
} as const;

/**
 * One line that is also CloudWatch metrics (EMF), as a request line is: counts under the dimension
 * `service`, each named by its metric.
 */
function emitServiceCounts(counts: Record<string, number>): void {
  writeLine({
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: metricsNamespace(),
          Dimensions: [['service']],
          Metrics: Object.keys(counts).map((name) => ({ Name: name, Unit: 'Count' })),
        },
      ],
    },
    service: SERVICE,
    ...counts,
  });
}

/** One line per deliverer batch that is also its metrics. */
export function emitDeliveries(
  attempts: number,
  failures: number,
  outcomes: { succeeded: number; failed: number; disabled: number } = {
    succeeded: 0,
    failed: 0,
    disabled: 0,
  },
): void {
  emitServiceCounts({
    [DELIVERY_METRICS.attempts]: attempts,
    [DELIVERY_METRICS.failures]: failures,
    [WEBHOOK_METRICS.succeeded]: outcomes.succeeded,
    [WEBHOOK_METRICS.failed]: outcomes.failed,
    [WEBHOOK_METRICS.disabled]: outcomes.disabled,
  });
}

/**
 * An attempt that was sent but could not be written to the delivery log (its event was settled
 * alone, so it is not sent again: `shared/webhooks/deliver.ts`).
 */
export const DELIVERY_LOG_FAILURES = 'DeliveryLogFailures';

export function emitDeliveryLogFailure(): void {
  emitServiceCounts({ [DELIVERY_LOG_FAILURES]: 1 });
}

/**
 * The subscription clock's metrics, dimension `service`: what a run renewed and ended, and the
 * changes (or shard reads) that failed and were pushed to the next run; the clock's alarm reads
 * `ClockFailures` (infra/monitoring.ts).
 */
export const CLOCK_METRICS = {
  renewed: 'ClockRenewed',
  ended: 'ClockEnded',
  failures: 'ClockFailures',
} as const;

/** One line per clock run that is also its metrics. */
export function emitClockRun(report: { renewed: number; ended: number; failures: number }): void {
  emitServiceCounts({
    [CLOCK_METRICS.renewed]: report.renewed,
    [CLOCK_METRICS.ended]: report.ended,
    [CLOCK_METRICS.failures]: report.failures,
  });
}

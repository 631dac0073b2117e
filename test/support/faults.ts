import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfiguredRetryStrategy, StandardRetryStrategy } from '@smithy/core/retry';
import { type DepsFor, functionClients, inProcessApi, type World } from './world.ts';

export type FaultKind =
  /** ThrottlingException (HTTP 400): the SDK retries it as throttling. */
  | 'throttling'
  /** InternalServerError (HTTP 500): the SDK retries it as a transient error. */
  | 'server-error'
  /** ProvisionedThroughputExceededException (HTTP 400): the SDK retries it as throttling. */
  | 'provisioned-throughput'
  /**
   * TransactionCanceledException with a TransactionConflict reason on a transaction,
   * TransactionConflictException on a single write: not retried by the SDK.
   */
  | 'transaction-conflict'
  /** TimeoutError / ETIMEDOUT, as the SDK's HTTP handler raises on its request timeout. */
  | 'timeout'
  /** ECONNRESET before the request reaches DynamoDB. */
  | 'connection-reset'
  /** The request reaches DynamoDB and is applied; the answer is lost (ECONNRESET). */
  | 'lost-response';

/**
 * The kinds by the path they take through the SDK and the data layer (shared/data/dynamo.ts `run`,
 * `translate`): the kinds of one class are retried the same way and end in the same answer, so one
 * kind per class at every call of every operation shows what the others would (the fast tier); the
 * long suite sends every kind everywhere, and the fast tier sends every kind at every call of one
 * operation (a kind leaving its class shows there).
 */
export const FAULT_CLASSES = {
  /** The SDK's throttling retries (its long back-off); past them `translate` names it: 503. */
  throttling: ['throttling', 'provisioned-throughput'],
  /** A 5xx: the SDK's transient retries; past them 503 (any status >= 500 is transient). */
  'server-error': ['server-error'],
  /** The request never reached DynamoDB (reset, timed out): transient retries; past them 503. */
  network: ['connection-reset', 'timeout'],
  /** Applied, the answer lost: the SDK's retry meets the first attempt's work (each write once). */
  'lost-response': ['lost-response'],
  /** Conditional-write/transaction cancel: not an SDK retry (a 400); `run` sends it again, then 503. */
  'transaction-conflict': ['transaction-conflict'],
} as const satisfies Record<string, readonly FaultKind[]>;

type ClassedKind = (typeof FAULT_CLASSES)[keyof typeof FAULT_CLASSES][number];
/** Every kind has its class: a new kind does not compile until it is given one. */
const everyKindClassed: [Exclude<FaultKind, ClassedKind>] extends [never] ? true : never = true;

/** Every kind, class by class. */
export const FAULT_KINDS: readonly FaultKind[] = everyKindClassed && Object.values(FAULT_CLASSES).flat();
/** The first kind of each class. */
export const CLASS_REPRESENTATIVES: readonly FaultKind[] = Object.values(FAULT_CLASSES).map(
  ([first]) => first,
);

export type FaultMode = 'healed' | 'persistent';

export interface FaultCase<Op> {
  op: Op;
  /** 1-based index of the call the fault starts at. */
  call: number;
  kind: FaultKind;
  mode: FaultMode;
}

/**
 * Each of `kinds` at each DynamoDB call of each operation, healed and persistent; a transaction
 * conflict only at a write (nothing else can meet one).
 */
export function faultCases<Op extends { calls: readonly string[] }>(
  ops: readonly Op[],
  kinds: readonly FaultKind[],
): FaultCase<Op>[] {
  const all: FaultCase<Op>[] = [];
  for (const op of ops) {
    op.calls.forEach((command, i) => {
      for (const kind of kinds) {
        if (kind === 'transaction-conflict' && !isWrite(command)) continue;
        for (const mode of ['healed', 'persistent'] as const) all.push({ op, call: i + 1, kind, mode });
      }
    });
  }
  return all;
}

/**
 * The fast tier's cases: every call of every operation is hit, and every call site class by the
 * fault classes that matter there, a few hundred cases instead of the matrix's thousand (each case
 * prepares its own customer, client or endpoint and reads the table after: DynamoDB Local's time,
 * not the back-off, is what the matrix costs).
 * - every call: a persistent fault (503, the table as before), its class rotating over the
 *   classes that can hit the call, so each class meets reads and writes of many operations;
 * - every write: a lost answer, healed (the write is there once) and persistent (at most once),
 *   and a conflict, healed (sent again by `run`) — what a write must survive at each site;
 * - every operation: a healed fault of an SDK-retried class at its last call (the function's own
 *   client retries and the request succeeds), the class rotating.
 */
export function fastFaultCases<Op extends { calls: readonly string[] }>(ops: readonly Op[]): FaultCase<Op>[] {
  const sdkRetried = [
    FAULT_CLASSES.throttling[0],
    FAULT_CLASSES['server-error'][0],
    FAULT_CLASSES.network[0],
  ];
  const all = new Map<string, FaultCase<Op>>();
  const add = (c: FaultCase<Op>, opIndex: number) => all.set(`${opIndex} ${c.call} ${c.kind} ${c.mode}`, c);
  let site = 0;
  ops.forEach((op, opIndex) => {
    op.calls.forEach((command, i) => {
      const call = i + 1;
      const write = isWrite(command);
      const kinds = CLASS_REPRESENTATIVES.filter((kind) => write || kind !== 'transaction-conflict');
      add({ op, call, kind: kinds[site++ % kinds.length] as FaultKind, mode: 'persistent' }, opIndex);
      if (write) {
        add({ op, call, kind: 'lost-response', mode: 'healed' }, opIndex);
        add({ op, call, kind: 'lost-response', mode: 'persistent' }, opIndex);
        add({ op, call, kind: 'transaction-conflict', mode: 'healed' }, opIndex);
      }
    });
    const kind = sdkRetried[opIndex % sdkRetried.length] as FaultKind;
    add({ op, call: op.calls.length, kind, mode: 'healed' }, opIndex);
  });
  return [...all.values()];
}

export interface Fault {
  kind: FaultKind;
  /** 1-based index of the request's DynamoDB call (an app-level retry is a further call). */
  call: number;
  /** How many attempts fail, from that call on; Infinity: every one. */
  times: number;
}

export interface Attempt {
  call: number;
  command: string;
  attempt: number;
  injected: FaultKind | null;
  at: number;
  /** A real (not injected) failure of this attempt. */
  failed?: string;
}

function serviceError(name: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), {
    name,
    $fault: 'client',
    $metadata: { httpStatusCode: 400, requestId: 'injected', attempts: 1, totalRetryDelay: 0 },
    ...extra,
  });
}

const isTransaction = (command: string) => command.startsWith('TransactWrite');

export function faultError(kind: FaultKind, command: string): Error {
  switch (kind) {
    case 'throttling':
      return serviceError('ThrottlingException', 'Rate of requests exceeds the allowed throughput.');
    case 'server-error':
      return Object.assign(serviceError('InternalServerError', 'Internal server error'), {
        $fault: 'server',
        $metadata: { httpStatusCode: 500, requestId: 'injected', attempts: 1, totalRetryDelay: 0 },
      });
    case 'provisioned-throughput':
      return serviceError(
        'ProvisionedThroughputExceededException',
        'The level of configured provisioned throughput for the table was exceeded.',
      );
    case 'transaction-conflict':
      return isTransaction(command)
        ? serviceError(
            'TransactionCanceledException',
            'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
            {
              // One reason per item of the transaction, in order: the conflict is on the second.
              CancellationReasons: [
                { Code: 'None' },
                { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' },
                { Code: 'None' },
              ],
            },
          )
        : serviceError('TransactionConflictException', 'Transaction is ongoing for the item');
    case 'timeout':
      return Object.assign(new Error('a request has exceeded the configured 2000 ms requestTimeout.'), {
        name: 'TimeoutError',
        code: 'ETIMEDOUT',
      });
    case 'connection-reset':
    case 'lost-response':
      return Object.assign(new Error('read ECONNRESET'), {
        code: 'ECONNRESET',
        errno: -104,
        syscall: 'read',
      });
  }
}

/** Commands that write: the only ones a transaction conflict can hit. */
export const isWrite = (command: string) => /^(Put|Update|Delete|TransactWrite|BatchWrite)/.test(command);

export class FaultInjector {
  readonly log: Attempt[] = [];
  private calls = 0;
  private injected = 0;

  constructor(private readonly fault?: Fault) {}

  /** Attempts per call, in call order: `[['GetItemCommand', 1], ['TransactWriteItemsCommand', 3]]`. */
  attemptsByCall(): [string, number][] {
    const byCall = new Map<number, [string, number]>();
    for (const { call, command } of this.log) {
      const entry = byCall.get(call) ?? [command, 0];
      entry[1]++;
      byCall.set(call, entry);
    }
    return [...byCall.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry);
  }

  injections(): number {
    return this.injected;
  }

  attach(doc: DynamoDBDocumentClient): void {
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        (context as { faultCall?: number }).faultCall = ++this.calls;
        return next(args);
      },
      { step: 'initialize', name: 'faultCallCounter' },
    );
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        const call = (context as { faultCall?: number }).faultCall ?? 0;
        const command = String((context as { commandName?: string }).commandName ?? '?');
        const attempt = this.log.filter((entry) => entry.call === call).length + 1;
        const fault = this.fault;
        const hit =
          fault !== undefined &&
          call >= fault.call &&
          this.injected < fault.times &&
          (fault.kind !== 'transaction-conflict' || isWrite(command));
        const entry: Attempt = {
          call,
          command,
          attempt,
          injected: hit ? fault.kind : null,
          at: performance.now(),
        };
        this.log.push(entry);
        if (!hit) {
          try {
            return await next(args);
          } catch (error) {
            const { name, code } = error as { name?: string; code?: string };
            entry.failed = `${name ?? ''} ${code ?? ''}`.trim();
            throw error;
          }
        }
        this.injected++;
        if (fault.kind === 'lost-response') {
          // Whatever DynamoDB answered, success or error, never arrives.
          await next(args).catch(() => undefined);
        }
        throw faultError(fault.kind, command);
      },
      { step: 'finalizeRequest', name: 'faultInjector', priority: 'low' },
    );
  }
}

export interface FaultyApi {
  call: ReturnType<typeof inProcessApi>;
  injector: FaultInjector;
  depsFor: DepsFor;
  destroy(): void;
}

export interface FaultyApiOptions {
  /** Where the functions' clients send their requests; default: the world's IAM proxy. */
  endpoint?: string;
  /** Applied to every function's client after the injector (extra hooks of one test). */
  configure?: (doc: DynamoDBDocumentClient) => void;
  /**
   * `none`: the SDK's retries without their back-off wait (`withoutRetryDelay`); default: the
   * production client's own, back-off included.
   */
  retryDelay?: 'production' | 'none';
  /**
   * `patient`: the SDK's own connection and request timeouts instead of the functions' 1 s / 2 s
   * (on a loaded machine one DynamoDB Local answer can take longer: a real timeout would take an
   * attempt the case counts on). The production timeouts are those of the default.
   */
  requestTimeouts?: 'production' | 'patient';
}

/** Far above any DynamoDB Local answer; a timeout the SDK raises still throws (as in production). */
const PATIENT_REQUEST_HANDLER = {
  requestHandler: { connectionTimeout: 10_000, requestTimeout: 20_000, throwOnRequestTimeout: true },
};

/**
 * The production client's retries without the wait between them. Its strategy is the SDK's
 * standard one (checked when the client first sends: a production change to another mode fails
 * here instead of being silently replaced); this is the same class with the same attempt count
 * (read from the client production built), so the same retry decisions, costs and quota, and only
 * the back-off computed as 0 ms. One per client, as each client has its own quota.
 */
export function withoutRetryDelay(doc: DynamoDBDocumentClient): void {
  const config = doc.config as unknown as {
    maxAttempts: () => Promise<number>;
    retryStrategy: () => Promise<unknown>;
  };
  const production = config.retryStrategy;
  const strategy = new ConfiguredRetryStrategy(config.maxAttempts, 0);
  config.retryStrategy = async () => {
    const resolved = await production();
    if (!(resolved instanceof StandardRetryStrategy) || resolved.constructor !== StandardRetryStrategy) {
      throw new Error(
        `the production retry strategy is ${String(resolved?.constructor?.name)}, not the standard one`,
      );
    }
    return strategy;
  };
}

/**
 * Fresh production clients (fresh retry quotas, the functions' own timeouts) with `fault` injected,
 * one per function as on Lambda, over the world's table and under the world's IAM enforcement.
 */
export function faultyApi(world: World, fault?: Fault, options: FaultyApiOptions = {}): FaultyApi {
  const injector = new FaultInjector(fault);
  const clients = functionClients({
    endpointFor: options.endpoint ? () => options.endpoint as string : world.iam.endpointFor,
    tableName: world.table.name,
    webhooks: world.admin.webhooks,
    ...(options.requestTimeouts === 'patient' ? { clientConfig: PATIENT_REQUEST_HANDLER } : {}),
    configure: (doc) => {
      if (options.retryDelay === 'none') withoutRetryDelay(doc);
      injector.attach(doc);
      options.configure?.(doc);
    },
  });
  return {
    call: inProcessApi(clients.depsFor),
    injector,
    depsFor: clients.depsFor,
    destroy: clients.destroy,
  };
}

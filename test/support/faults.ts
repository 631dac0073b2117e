import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type DepsFor, functionClients, inProcessApi, type World } from './world.ts';

export type FaultKind =
  /** ThrottlingException (HTTP 400): the SDK retries it as throttling. */
  | 'throttling'
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
    configure: (doc) => {
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

/**
 * The IAM proxy's judgement without its HTTP hop, for the clients of the functions `npm start` runs in
 * its own process: the client's request handler (the last step before the wire) hands the signed
 * request's target header and body — the bytes DynamoDB would receive — to the same judge the proxy
 * uses, and either answers the same refusal (`AccessDeniedException`, HTTP 400) or sends the request
 * straight to DynamoDB Local. Measured (test/bench, section 5): the hop was a second HTTP server and
 * client per DynamoDB call.
 *
 * Processes other than this one (the SAM contract tests, `sam local`) still go through the proxy's
 * per-function ports; `LOCAL_IAM=proxy npm start` sends the in-process clients there too.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { IamJudge } from './judge.ts';

interface WireRequest {
  headers: Record<string, string>;
  body?: unknown;
}

interface RequestHandler {
  handle(request: WireRequest, options?: unknown): Promise<{ response: unknown }>;
  [key: string]: unknown;
}

const header = (headers: Record<string, string>, name: string): string => {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return '';
};

function bodyOf(body: unknown): Buffer | string {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string' || Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // A streamed body: DynamoDB's JSON protocol never sends one; refuse rather than guess.
  throw new Error('IAM judge: a DynamoDB request body that is not bytes cannot be judged');
}

/**
 * Puts `judge` in front of the client's own request handler, as the function `functionName`. Call
 * before the client's first `send` (the SDK binds the handler into its middleware then).
 */
export function judgeInProcess(doc: DynamoDBDocumentClient, judge: IamJudge, functionName: string): void {
  if (!judge.functions.includes(functionName))
    throw new Error(`the stack has no function named ${functionName}`);
  const config = doc.config as unknown as { requestHandler: RequestHandler };
  const wire = config.requestHandler;
  const judging: RequestHandler = Object.create(wire);
  judging.handle = async (request, options) => {
    const refusal = judge.judge(functionName, header(request.headers, 'x-amz-target'), bodyOf(request.body));
    if (!refusal) return wire.handle(request, options);
    return {
      response: {
        statusCode: refusal.status,
        reason: 'Bad Request',
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amzn-requestid': randomUUID(),
          'content-length': String(Buffer.byteLength(refusal.body)),
        },
        body: Readable.from([Buffer.from(refusal.body)]),
      },
    };
  };
  config.requestHandler = judging;
}

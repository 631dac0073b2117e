import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { SQSClient } from '@aws-sdk/client-sqs';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAMBDA_NODE_MAJOR } from '#scripts/lambda-node.ts';
import { fromLambdaResult, toApiGatewayEvent } from '#scripts/local/apigw.ts';
import { sqsEvent } from '#scripts/local/pipeline.ts';
import { type ApiServer, type LambdaHandler, startApiServer } from '#scripts/local/server.ts';
import { LOCAL_REGION, LOCAL_TABLE_NAME } from '#scripts/local/stack.ts';
import { loadOpenApi } from '#scripts/openapi.ts';
import { LOCAL_DELIVERY_QUEUE_NAME } from '#scripts/sam-events.ts';
import { getWebhookEvent } from '#shared/data/deliveries.ts';
import { createDocumentClient } from '#shared/data/dynamo.ts';
import type { OutboxEventRecord } from '#shared/data/records.ts';
import { keys, outboxKeys, REDELIVERY_SORT_KEY_PREFIX } from '#shared/data/table.ts';
import { organizationWebhookEndpoints } from '#shared/data/webhooks.ts';
import { newId } from '#shared/domain/ids.ts';
import { swaggerUiAssets } from '#shared/http/api-reference.ts';
import { DEFAULT_ROUTE_KEY } from '#shared/http/routes.ts';
import { apiReference, operations, pipelineFunctions, routeNotFound } from '#shared/operations.ts';
import { sqsQueue } from '#shared/queue/sqs.ts';
import { envelope, webhookEventId } from '#shared/webhooks/events.ts';
import { operationCards } from '#test/cards/index.ts';
import { fetchJson } from '../support/contract.ts';
import {
  codeOf,
  demo,
  expectEmf,
  expectSampleInvocation,
  functionIdOf,
  invokeBundle,
  lambdaFunctions,
  rendered,
  replyOf,
  requestLines,
  useSamWorld,
} from '../support/sam.ts';

useSamWorld();
const cards = await operationCards();

describe('every bundle', () => {
  it.each([...operations, ...pipelineFunctions].map((definition) => [definition.name] as const))(
    "%s: the bundle, imported in a fresh process of the runtime's Node 22, exports the named handler function",
    async (name) => {
      const { exported, node } = await invokeBundle(functionIdOf(name));
      expect(exported).toBe('function');
      // The runtime the functions declare, not the Node running the tests.
      expect(node).toMatch(new RegExp(`^v${LAMBDA_NODE_MAJOR}\\.`));
      expect(
        lambdaFunctions().every(([, fn]) => fn.Properties.Runtime === `nodejs${LAMBDA_NODE_MAJOR}.x`),
      ).toBe(true);
    },
  );
});

describe('sam local invoke <function> -e .local/events/<operation>.json --env-vars .local/events/env.json', () => {
  // Each its card's sample (test/cards/<operation>.ts), against the fixture put back before it.
  it.each(operations.map((op, i) => [op.name, cards[i]?.sample.label, op] as const))(
    '%s: %s',
    async (_, __, op) => {
      await expectSampleInvocation(op);
    },
  );
});

describe('the request line of a bundled function', () => {
  it('names the error type of a refusal, as a metric dimension too, and carries no credential', async () => {
    const event = structuredClone(rendered.get('get-product.json'));
    event.headers.authorization = 'Bearer polar_pat_thisTokenDoesNotExist0000000000000000000000';
    const { result, stdout } = await invokeBundle(functionIdOf('get-product'), event);
    expect(replyOf(result).status).toBe(401);
    const [line] = requestLines(stdout);
    expect(line).toMatchObject({
      operation: 'get-product',
      status: 401,
      error_type: 'invalid_token',
      Errors4xx: 1,
      Errors5xx: 0,
      principal_kind: null,
    });
    expect(line?._aws.CloudWatchMetrics[0].Dimensions).toContainEqual(['service', 'operation', 'error_type']);
    expectEmf(line);
    expect(stdout).not.toContain('thisTokenDoesNotExist');
  });

  it('says who called: the principal kind and organization, never the token', async () => {
    const event = rendered.get('get-product.json');
    const { stdout } = await invokeBundle(functionIdOf('get-product'), event);
    const [line] = requestLines(stdout);
    expect(line).toMatchObject({ principal_kind: 'user', organization_ids: [demo.organization_id] });
    expect(stdout).not.toContain(event.headers.authorization.slice('Bearer '.length));
  });

  it('at LOG_LEVEL=warn keeps the metrics and drops the log fields', async () => {
    const { stdout } = await invokeBundle(functionIdOf('get-product'), rendered.get('get-product.json'), {
      LOG_LEVEL: 'warn',
    });
    const lines = stdout
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toHaveProperty('message');
    expect(lines[0]).not.toHaveProperty('request_id');
    expectEmf(lines[0]);
    expect(lines[0]).toMatchObject({ operation: 'get-product', Requests: 1 });
  });
});

describe("the $default route's function, bundled: what API Gateway answers for routes no operation takes", () => {
  let local: ApiServer;
  beforeAll(async () => {
    // The local API, whose $default route runs the same function in process.
    local = await startApiServer({
      port: 0,
      quiet: true,
      loadHandler: async (fn) => {
        if (fn.name !== routeNotFound.name) throw new Error(`${fn.name} must not be called here`);
        return ((await import('../../functions/route-not-found/handler.ts')) as { handler: LambdaHandler })
          .handler;
      },
    });
  });
  afterAll(() => local?.close());

  it.each([
    ['GET', '/v1/nope'],
    ['GET', '/'],
    ['PUT', '/v1/subscriptions/'],
    ['DELETE', '/v1/customer-portal/wallets'],
    ['PUT', '/v1/webhooks/endpoints/5a1c0e8e-8f0a-4c56-9d0b-7b1c2d3e4f50'],
    ['OPTIONS', '/v1/oauth2/register'],
  ])('%s %s: the bundle answers exactly what the local API answers', async (method, path) => {
    const event = toApiGatewayEvent(
      { method, url: path, httpVersion: '1.1', rawHeaders: ['host', 'api.test'], socket: {} },
      Buffer.alloc(0),
      { routeKey: DEFAULT_ROUTE_KEY },
    );
    const bundled = replyOf((await invokeBundle(functionIdOf(routeNotFound.name), event)).result);
    const served = await fetchJson(`${local.url}${path}`, { method });
    expect(bundled.status).toBe(served.status);
    expect(bundled.body).toEqual(served.body);
    expect(bundled.headers.get('content-type')).toBe('application/json');
    expect(bundled.headers.get('allow')).toBe(served.headers.get('allow'));
    expect([404, 405]).toContain(bundled.status);
    expect(bundled.body).toEqual(
      bundled.status === 404
        ? { error: 'NotFound', detail: 'Not Found' }
        : { error: 'MethodNotAllowed', detail: 'Method Not Allowed' },
    );
  });
});

describe('the API reference, bundled: its assets ship with the function (no node_modules on Lambda)', () => {
  const get = async (path: string) => {
    const event = toApiGatewayEvent(
      {
        method: 'GET',
        url: path,
        httpVersion: '1.1',
        rawHeaders: ['host', 'api.test', 'accept-encoding', 'gzip'],
        socket: {},
      },
      Buffer.alloc(0),
      { routeKey: `GET ${path}` },
    );
    const response = fromLambdaResult((await invokeBundle(functionIdOf(apiReference.name), event)).result);
    const gzipped = response.headers['content-encoding'] === 'gzip';
    return { response, text: (gzipped ? gunzipSync(response.body) : response.body).toString('utf8') };
  };

  it('serves the OpenAPI document', async () => {
    const { response, text } = await get('/openapi.json');
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(text)).toEqual(loadOpenApi());
  });

  it.each(Object.keys(swaggerUiAssets))('serves %s byte for byte from beside the bundle', async (file) => {
    // The bundle runs from a temporary cdk.out: no node_modules above it to fall back to.
    expect(existsSync(join(codeOf(functionIdOf(apiReference.name)).assetDir, file))).toBe(true);
    const { response, text } = await get(`/docs/${file}`);
    expect(response.statusCode).toBe(200);
    const require = createRequire(import.meta.url);
    expect(text).toBe(readFileSync(require.resolve(`swagger-ui-dist/${file}`), 'utf8'));
  });
});

describe('the webhook pipeline, bundled: a stream record through the relay, its messages through the deliverer', () => {
  it('the relay records a webhook event per subscribed endpoint and queues them; the deliverer opens the secret from Secrets Manager, attempts, records and schedules the retry', async () => {
    const table = { doc: createDocumentClient({ endpoint: demo.dynamodb_endpoint }), name: LOCAL_TABLE_NAME };
    const sqs = new SQSClient({
      endpoint: demo.sqs_endpoint,
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      // The targets as the relay must find them: live, enabled, subscribed (the demo's subscribe to subscription.created).
      const targets = (await organizationWebhookEndpoints(table, demo.organization_id)).filter(
        (endpoint) => endpoint.enabled && endpoint.events.includes('subscription.created'),
      );
      expect(targets.length).toBeGreaterThan(0);
      const at = new Date().toISOString();
      const subject = newId();
      const event: OutboxEventRecord = {
        id: newId(),
        organization_id: demo.organization_id,
        type: 'subscription.created',
        timestamp: at,
        payload: envelope('subscription.created', at, { id: subject }),
        subject_kind: 'subscription',
        subject_id: subject,
      };
      const key = outboxKeys.event('subscription', subject, at, 0, event.id);
      const outboxItem = { ...key, entity: 'outbox_event', ...event };
      // A stream record is of an item in the table: the deliverer reads the payload from it (an
      // outbox item gone is an event past its retention, skipped: 3 of the 4 messages, when the
      // record came from nowhere).
      await table.doc.send(new PutCommand({ TableName: LOCAL_TABLE_NAME, Item: outboxItem }));
      // Redeliver of the demo's event (its event file rendered with the demo data), through its bundle:
      // its request recorded beside the event's new round.
      const redeliver = await invokeBundle(
        functionIdOf('redeliver-webhook-event'),
        rendered.get('redeliver-webhook-event.json'),
      );
      expect(replyOf(redeliver.result).status).toBe(202);
      const redeliveries = await table.doc.send(
        new QueryCommand({
          TableName: LOCAL_TABLE_NAME,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :sk)',
          ExpressionAttributeValues: {
            ':pk': keys.webhookEvent(demo.webhook_event_id).PK,
            ':sk': REDELIVERY_SORT_KEY_PREFIX,
          },
        }),
      );
      expect(redeliveries.Items).toHaveLength(1);
      // The records Lambda's DynamoDB stream mapping hands the relay (NEW_IMAGE, inserts): the
      // outbox item, and the Redeliver request.
      const streamEvent = {
        Records: [outboxItem, redeliveries.Items?.[0] as Record<string, unknown>].map((image, i) => ({
          eventID: String(i + 1),
          eventName: 'INSERT',
          eventVersion: '1.1',
          eventSource: 'aws:dynamodb',
          awsRegion: LOCAL_REGION,
          dynamodb: {
            Keys: marshall({ PK: image.PK, SK: image.SK }),
            NewImage: marshall(image),
            SequenceNumber: `10000000000000000000${i + 1}`,
            SizeBytes: 512,
            StreamViewType: 'NEW_IMAGE',
          },
          eventSourceARN: `arn:aws:dynamodb:${LOCAL_REGION}:123456789012:table/${LOCAL_TABLE_NAME}/stream/x`,
        })),
      };
      await invokeBundle(functionIdOf('webhook-relay'), streamEvent);
      const ids = targets.map((endpoint) => webhookEventId(event.id, endpoint.id)).sort();
      for (const id of ids) {
        expect(await getWebhookEvent(table, id)).toMatchObject({ status: 'pending', attempts: 0, round: 1 });
      }

      const messages = await sqsQueue(sqs, demo.delivery_queue_url).receive({ max: 10, waitSeconds: 1 });
      // The relay's: one per target, and the demo event's second round.
      expect(messages.map((m) => JSON.parse(m.body).webhook_event_id).sort()).toEqual(
        [...ids, demo.webhook_event_id].sort(),
      );
      const { result, stdout } = await invokeBundle(
        functionIdOf('webhook-deliverer'),
        sqsEvent(messages, `arn:aws:sqs:${LOCAL_REGION}:123456789012:${LOCAL_DELIVERY_QUEUE_NAME}`),
      );
      // The demo's endpoints are at hooks.*.example, a name no DNS answers: each first attempt fails
      // and is retried (reported failed, its visibility set by the ladder).
      expect((result as SQSBatchResponse).batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
        messages.map((m) => m.messageId).sort(),
      );
      for (const id of ids) {
        expect(await getWebhookEvent(table, id)).toMatchObject({
          status: 'pending',
          attempts: 1,
          last_http_code: null,
        });
      }
      // The redelivered one: its second round's first attempt.
      expect(await getWebhookEvent(table, demo.webhook_event_id)).toMatchObject({
        status: 'pending',
        round: 2,
        attempts: 1,
      });
      // Signing needed the key set: opened from Secrets Manager (moto) with the bundle's own grant.
      expect(stdout).not.toMatch(/"level":"error"/);
    } finally {
      sqs.destroy();
      table.doc.destroy();
    }
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { LAMBDA_NODE_MAJOR } from '#scripts/lambda-node.ts';
import { LOCAL_TABLE_NAME } from '#scripts/local/stack.ts';
import { ENV_VARS_FILE, renderEvents, renderTemplate, templateVariables } from '#scripts/sam-events.ts';
import { operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';
import {
  LOCAL_ENDPOINT_ENV,
  LOCAL_SECRETS_ENDPOINT_ENV,
  LOCAL_SQS_ENDPOINT_ENV,
} from '../../infra/function.ts';
import {
  codeOf,
  demo,
  expectSampleInvocation,
  functionIdOf,
  iam,
  invokeBundle,
  type LogLine,
  lambdaFunctions,
  model,
  outdir,
  rendered,
  tableFunctionIds,
  template,
  useSamWorld,
} from '../support/sam.ts';

useSamWorld();

describe('code SAM finds from the template', () => {
  it('has one function per operation, each with asset metadata pointing into the cloud assembly', () => {
    expect(
      lambdaFunctions()
        .map(([id]) => id)
        .sort(),
    ).toEqual(Object.keys(model.functions).map(functionIdOf).sort());
    for (const [, fn] of lambdaFunctions()) {
      expect(fn.Metadata).toMatchObject({ 'aws:asset:property': 'Code', 'aws:asset:is-bundled': true });
      // Relative to the template's directory, which is where SAM resolves it.
      expect(fn.Metadata['aws:asset:path']).toMatch(/^asset\.[0-9a-f]{64}$/);
    }
  });

  it('resolves every Handler to a module file in that directory', () => {
    for (const [logicalId, fn] of lambdaFunctions()) {
      expect(fn.Properties.Handler).toBe('index.handler');
      const { assetDir, file } = codeOf(logicalId);
      expect(dirname(file)).toBe(assetDir);
      expect(file.endsWith('index.mjs')).toBe(true);
    }
  });

  it('needs nothing outside the asset directory: the AWS SDK is bundled', () => {
    // Imported from a temporary directory, a bare `@aws-sdk/...` import would have no node_modules to find.
    for (let dir = outdir; dir !== dirname(dir); dir = dirname(dir)) {
      expect(existsSync(join(dir, 'node_modules')), `${dir}/node_modules`).toBe(false);
    }
  });

  it('carries no module the function does not run: the route table in no operation, the address guard only where an endpoint URL is checked or sent to', () => {
    // The modules of each bundle, by function name, as its source map lists them.
    const modules = Object.fromEntries(
      Object.keys(model.functions).map((name) => {
        const { file } = codeOf(functionIdOf(name));
        const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
        return [name, map.sources];
      }),
    );
    // Sources are relative to wherever CDK bundled: a module is known by its path from the repository's root.
    const holds = (sources: string[] | undefined, module: string) =>
      (sources ?? []).some((source) => source.endsWith(`/${module}`) && !source.includes('node_modules/'));
    const holding = (module: string) =>
      Object.entries(modules)
        .filter(([, sources]) => holds(sources, module))
        .map(([name]) => name)
        .sort();
    expect(holds(modules['list-wallets'], 'shared/http/api.ts')).toBe(true);
    // Every grant of every operation: read at synth, never at an operation's cold start. Only the two
    // functions that answer from the route table itself hold its module (a 405's `Allow`, discovery's
    // endpoints), and no bundle carries a grant: esbuild keeps only the routes they read.
    expect(holding('shared/generated/operations.ts')).toEqual(['oauth-discovery', 'route-not-found']);
    expect(holding('shared/operations.ts')).toEqual([]);
    for (const name of Object.keys(modules)) {
      expect(readFileSync(codeOf(functionIdOf(name)).file, 'utf8'), name).not.toContain('dynamodb:PutItem');
    }
    // The special-purpose ranges, parsed at load: only the webhook endpoint API (whose service checks
    // URLs as they are saved) and the deliverer (which checks each address it connects to) hold them.
    expect(holding('shared/webhooks/address-guard.ts')).toEqual(
      [
        ...operations.filter((op) => op.path.startsWith('/v1/webhooks/endpoints')).map((op) => op.name),
        'webhook-deliverer',
      ].sort(),
    );
  });
});

describe('events/ and events/env.json', () => {
  it('holds one sample payload 2.0 event per operation, routed by the template to that function', () => {
    const routes = Object.values(template.Resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route');
    const integrations = template.Resources;
    for (const op of operations) {
      const event = rendered.get(`${op.name}.json`);
      expect(event, `events/${op.name}.json`).toBeDefined();
      expect(event).toMatchObject({
        version: '2.0',
        isBase64Encoded: false,
        requestContext: { routeKey: event.routeKey, stage: '$default', http: { method: op.method } },
      });
      // A bearer credential, or (the token endpoints) the client's own credentials in the form.
      if (op.credential === 'oauth_client')
        expect(event.body).toMatch(/client_id=\{\{oauth_client\.client_id\}\}|client_id=polar_ci_/);
      else expect(event.headers.authorization).toMatch(/^Bearer polar_(pat|cst|crt)_/);
      expect(event.requestContext.http.path).toBe(event.rawPath);

      const route = routes.find((r) => r.Properties.RouteKey === event.routeKey);
      expect(route, `route ${event.routeKey}`).toBeDefined();
      const integrationId = route?.Properties.Target['Fn::Join'][1][1].Ref as string;
      expect(integrations[integrationId]?.Properties.IntegrationUri).toEqual({
        'Fn::GetAtt': [functionIdOf(op.name), 'Arn'],
      });
    }
  });

  it('renders every placeholder from the demo data, and refuses one it cannot fill', () => {
    for (const [file, content] of renderEvents(demo)) {
      expect(JSON.stringify(content), file).not.toMatch(/\{\{\s*[\w.]+\s*\}\}/);
    }
    expect(rendered.get('delete-webhook-endpoint.json').pathParameters).toEqual({
      id: demo.webhook_endpoint_ids[1],
    });
    expect(() =>
      renderTemplate({ a: 'Bearer {{no_such_token}}' }, templateVariables(demo), 'x.json'),
    ).toThrow('x.json: no value for {{no_such_token}}');
  });

  it('points every function at the local table, each through its own IAM proxy endpoint, in variables the template declares', () => {
    const file = rendered.get(ENV_VARS_FILE);
    // Every function's issuer: the local API's own address, as the stack gives each stage its own.
    expect(file.Parameters).toEqual({ TABLE_NAME: LOCAL_TABLE_NAME, ISSUER_URL: demo.base_url });
    const sections = Object.keys(file).filter((key) => key !== 'Parameters');
    expect(sections.sort()).toEqual([...tableFunctionIds()].sort());
    for (const op of [...operations, ...scheduledFunctions]) {
      const port = new URL(iam?.endpointFor(op.name) ?? '').port;
      expect(file[functionIdOf(op.name)]).toEqual({
        [LOCAL_ENDPOINT_ENV]: `http://host.docker.internal:${port}`,
        // The functions that seal or open webhook secrets: the key set in the local Secrets Manager.
        ...('webhookKeySet' in op && {
          [LOCAL_SECRETS_ENDPOINT_ENV]: `http://host.docker.internal:${new URL(demo.secrets_manager_endpoint).port}`,
          WEBHOOK_KEY_SET_ID: demo.webhook_key_set_arn,
        }),
      });
    }
    const sqsPort = new URL(demo.sqs_endpoint).port;
    for (const fn of pipelineFunctions) {
      const port = new URL(iam?.endpointFor(fn.name) ?? '').port;
      if (fn.name === 'meter-aggregator') {
        // The meter aggregator reads and writes the table only: no queue, no key set.
        expect(file[functionIdOf(fn.name)]).toEqual({
          [LOCAL_ENDPOINT_ENV]: `http://host.docker.internal:${port}`,
        });
        continue;
      }
      expect(file[functionIdOf(fn.name)]).toEqual({
        [LOCAL_ENDPOINT_ENV]: `http://host.docker.internal:${port}`,
        // The delivery queue in the local SQS API.
        [LOCAL_SQS_ENDPOINT_ENV]: `http://host.docker.internal:${sqsPort}`,
        DELIVERY_QUEUE_URL: demo.delivery_queue_url.replace(
          new URL(demo.delivery_queue_url).origin,
          `http://host.docker.internal:${sqsPort}`,
        ),
        ...('webhookKeySet' in fn && {
          [LOCAL_SECRETS_ENDPOINT_ENV]: `http://host.docker.internal:${new URL(demo.secrets_manager_endpoint).port}`,
          WEBHOOK_KEY_SET_ID: demo.webhook_key_set_arn,
        }),
      });
    }
    // SAM overrides declared variables and silently drops the rest.
    for (const [logicalId, fn] of lambdaFunctions().filter(([id]) => tableFunctionIds().has(id))) {
      for (const name of [...Object.keys(file.Parameters), ...Object.keys(file[logicalId])]) {
        expect(Object.keys(fn.Properties.Environment.Variables), `${logicalId} declares ${name}`).toContain(
          name,
        );
      }
    }
  });

  it('leaves the deployed functions on the regional endpoint: the declared endpoint variable is empty', async () => {
    for (const [, fn] of lambdaFunctions().filter(([id]) => tableFunctionIds().has(id))) {
      expect(fn.Properties.Environment.Variables[LOCAL_ENDPOINT_ENV]).toBe('');
      expect(fn.Properties.Environment.Variables[LOCAL_SECRETS_ENDPOINT_ENV] ?? '').toBe('');
      expect(fn.Properties.Environment.Variables[LOCAL_SQS_ENDPOINT_ENV] ?? '').toBe('');
    }
    vi.stubEnv(LOCAL_ENDPOINT_ENV, '');
    try {
      const client = new DynamoDBClient({
        region: 'eu-west-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      });
      let hostname: string | undefined;
      client.middlewareStack.add(
        () => async (args) => {
          hostname = (args.request as { hostname?: string }).hostname;
          throw new Error('stop before sending');
        },
        { step: 'finalizeRequest' },
      );
      await expect(client.send(new ListTablesCommand({}))).rejects.toThrow('stop before sending');
      expect(hostname).toBe('dynamodb.eu-west-1.amazonaws.com');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('sam local invoke <function> -e .local/events/<operation>.json --env-vars .local/events/env.json', () => {
  // The representative: bundles.test.ts runs every operation's. create-customer writes (a customer and
  // its outbox event) after reading the token, so it crosses the IAM proxy's grants both ways.
  const op = operations.find((candidate) => candidate.name === 'create-customer');
  it("create-customer: its card's sample, from its bundle on the runtime's Node 22", async () => {
    if (!op) throw new Error('no create-customer operation');
    const { exported, node } = await expectSampleInvocation(op);
    expect(exported).toBe('function');
    expect(node).toMatch(new RegExp(`^v${LAMBDA_NODE_MAJOR}\\.`));
  });
});

describe('sam local invoke <the subscription clock> -e .local/events/subscription-clock.json', () => {
  it('the bundle runs a scheduled event against the local table: a full run, reported in one line', async () => {
    const event = rendered.get('subscription-clock.json');
    expect(event).toMatchObject({ source: 'aws.events', 'detail-type': 'Scheduled Event' });
    const { result, stdout } = await invokeBundle(functionIdOf(scheduledFunctions[0].name), event);
    // Nothing of the demo is due now; the run reads every shard of the due index and completes.
    expect(result).toMatchObject({ renewed: 0, ended: 0, complete: true });
    expect((result as { batches: number }).batches).toBeGreaterThanOrEqual(4);
    const lines = stdout
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text) as LogLine);
    expect(lines.filter((line) => line.message === 'subscription clock')).toHaveLength(1);
  });
});

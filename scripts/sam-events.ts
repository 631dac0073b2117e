/**
 * `npm run sam:events`: renders the sample API Gateway (HTTP API, payload 2.0)
 * events in `events/*.json` and the `sam local` env-vars file `events/env.json`
 * into `.local/events/`, filling their `{{placeholders}}` from `.local/demo.json`
 * (written by `npm start`). The demo seed makes new ids and tokens on every run,
 * so the committed files carry placeholders and this fills in the current ones.
 *
 * A placeholder names a field of demo.json, with dots into nested values
 * (`{{webhook_endpoint_ids.0}}`, `{{other_organization.personal_access_token}}`);
 * `{{dynamodb_port}}` is the port of `dynamodb_endpoint`. An unknown one is an error.
 *
 * The env-vars file also gets one section per function of the synthesised template
 * (`cdk.out/CommerceApi-prod.template.json`, from `npm run synth`), pointing that function at its
 * own endpoint of the local IAM proxy, so `sam local` runs each function under its own policy.
 *
 * The functions that seal or open webhook secrets read the webhook key set from Secrets Manager.
 * `npm run sam:events -- --secrets-manager http://127.0.0.1:5000` puts `npm start`'s key set
 * (`.local/webhook-keys.json`) into the Secrets Manager API at that address (`moto_server -p 5000`)
 * and points those functions at it; without it they answer 500 when they need the key set.
 *
 * The webhook pipeline's functions (relay, deliverer) use the delivery queue: `--sqs
 * http://127.0.0.1:5000` creates one in the SQS API at that address (moto again) and points them at
 * it. Their events are not API requests: `sam local invoke WebhookRelayFunction…` takes a DynamoDB
 * stream event, the deliverer an SQS event (the test suite builds both: test/infra/sam.test.ts).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CreateSecretCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_SECRETS_ENDPOINT_ENV, LOCAL_SQS_ENDPOINT_ENV } from '../infra/function.ts';
import { constructId } from '../infra/stack.ts';
import { WEBHOOK_KEY_SET_ID_ENV } from '../shared/env.ts';
import { DELIVERY_QUEUE_URL_ENV } from '../shared/queue/production.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const EVENTS_DIR = join(ROOT, 'events');
export const DEMO_FILE = join(ROOT, '.local', 'demo.json');
export const RENDERED_DIR = join(ROOT, '.local', 'events');
export const TEMPLATE_FILE = join(ROOT, 'cdk.out', 'CommerceApi-prod.template.json');
/** How a container of `sam local` reaches the host (on Linux: `--add-host host.docker.internal:host-gateway`). */
export const DOCKER_HOST = 'host.docker.internal';
const ENDPOINT_ENV = 'AWS_ENDPOINT_URL_DYNAMODB';
export const KEYS_FILE = join(ROOT, '.local', 'webhook-keys.json');
/** The name the key set is stored under in a local Secrets Manager. */
export const LOCAL_KEY_SET_NAME = 'commerce-api-local/webhook-key-set';

interface Template {
  Resources: Record<string, { Type: string; Properties?: { Environment?: { Variables?: object } } }>;
}

/**
 * `{ <function logical id>: { AWS_ENDPOINT_URL_DYNAMODB: <its IAM proxy endpoint> } }` for every
 * function of the template that declares the endpoint variable (SAM overrides only declared ones).
 */
export function functionEndpointSections(
  demo: {
    function_endpoints?: Record<string, string>;
    /** Where a local Secrets Manager holds the webhook key set (`--secrets-manager`), and its ARN. */
    secrets_manager_endpoint?: string;
    webhook_key_set_arn?: string;
    /** A local SQS API and the delivery queue in it, for the webhook pipeline's functions. */
    sqs_endpoint?: string;
    delivery_queue_url?: string;
  },
  template: Template,
): Record<string, Record<string, string>> {
  const endpoints = demo.function_endpoints;
  if (!endpoints) throw new Error('the demo data has no function_endpoints: restart `npm start`');
  const sections: Record<string, Record<string, string>> = {};
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    if (resource.Type !== 'AWS::Lambda::Function') continue;
    if (!Object.hasOwn(resource.Properties?.Environment?.Variables ?? {}, ENDPOINT_ENV)) continue;
    // `CreateClient/Function` gets the logical id `CreateClientFunction` + an 8-digit hash.
    const name = Object.keys(endpoints).find((candidate) =>
      new RegExp(`^${constructId(candidate)}Function[0-9A-F]{8}$`).test(logicalId),
    );
    const endpoint = name === undefined ? undefined : endpoints[name];
    if (!endpoint) throw new Error(`no IAM proxy endpoint for ${logicalId} in the demo data`);
    sections[logicalId] = { [ENDPOINT_ENV]: dockerOrigin(endpoint) };
    const { secrets_manager_endpoint: secrets, webhook_key_set_arn: arn } = demo;
    if (
      secrets &&
      arn &&
      Object.hasOwn(resource.Properties?.Environment?.Variables ?? {}, LOCAL_SECRETS_ENDPOINT_ENV)
    ) {
      Object.assign(sections[logicalId], {
        [LOCAL_SECRETS_ENDPOINT_ENV]: dockerOrigin(secrets),
        [WEBHOOK_KEY_SET_ID_ENV]: arn,
      });
    }
    const { sqs_endpoint: sqs, delivery_queue_url: queueUrl } = demo;
    if (
      sqs &&
      queueUrl &&
      Object.hasOwn(resource.Properties?.Environment?.Variables ?? {}, LOCAL_SQS_ENDPOINT_ENV)
    ) {
      Object.assign(sections[logicalId], {
        [LOCAL_SQS_ENDPOINT_ENV]: dockerOrigin(sqs),
        [DELIVERY_QUEUE_URL_ENV]: queueUrl.replace(new URL(queueUrl).origin, dockerOrigin(sqs)),
      });
    }
  }
  return sections;
}

/** The address of a host service as a `sam local` container reaches it. */
function dockerOrigin(endpoint: string): string {
  const url = new URL(endpoint);
  url.hostname = DOCKER_HOST;
  return url.origin;
}

/** Stores a key set in the Secrets Manager API at `endpoint` (moto locally); returns its ARN. */
export async function storeKeySet(endpoint: string, keySet: string): Promise<string> {
  const client = new SecretsManagerClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    return (
      (await client.send(new CreateSecretCommand({ Name: LOCAL_KEY_SET_NAME, SecretString: keySet }))).ARN ??
      ''
    );
  } catch (error) {
    if (!(error instanceof ResourceExistsException)) throw error;
    return (
      (await client.send(new PutSecretValueCommand({ SecretId: LOCAL_KEY_SET_NAME, SecretString: keySet })))
        .ARN ?? ''
    );
  } finally {
    client.destroy();
  }
}

/** The name of the delivery queue in a local SQS API. */
export const LOCAL_DELIVERY_QUEUE_NAME = 'commerce-api-local-deliveries';

/** Creates (or finds) the delivery queue in the SQS API at `endpoint` (moto locally); returns its URL. */
export async function createDeliveryQueue(endpoint: string): Promise<string> {
  const client = new SQSClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    return (
      (await client.send(new CreateQueueCommand({ QueueName: LOCAL_DELIVERY_QUEUE_NAME }))).QueueUrl ?? ''
    );
  } finally {
    client.destroy();
  }
}

/** The env-vars file for `sam local invoke/start-api --env-vars`; every other file is an event. */
export const ENV_VARS_FILE = 'env.json';

const PLACEHOLDER = /\{\{\s*([\w.]+)\s*\}\}/g;
/** Ids, tokens, ports: nothing that would need escaping inside a JSON string inside a JSON string. */
const SAFE_VALUE = /^[\w.:/-]*$/;

/** Every scalar of demo.json by its dotted path, plus `dynamodb_port`. */
export function templateVariables(demo: object): Map<string, string> {
  const variables = new Map<string, string>();
  const visit = (value: unknown, path: string) => {
    if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) visit(child, path ? `${path}.${key}` : key);
    } else if (value !== null && value !== undefined && path) {
      variables.set(path, String(value));
    }
  };
  visit(demo, '');
  const endpoint = variables.get('dynamodb_endpoint');
  if (endpoint) variables.set('dynamodb_port', new URL(endpoint).port);
  return variables;
}

/** Fills the placeholders of every string in a parsed JSON document (keys included). */
export function renderTemplate(
  template: unknown,
  variables: Map<string, string>,
  source = 'template',
): unknown {
  const fill = (text: string) =>
    text.replace(PLACEHOLDER, (_, name: string) => {
      const value = variables.get(name);
      if (value === undefined) throw new Error(`${source}: no value for {{${name}}} in the demo data`);
      if (!SAFE_VALUE.test(value))
        throw new Error(`${source}: {{${name}}} = ${JSON.stringify(value)} is unsafe`);
      return value;
    });
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return fill(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, child]) => [fill(key), walk(child)]));
    }
    return value;
  };
  return walk(template);
}

/**
 * `events/<name>.json` rendered, by file name (`create-client.json`, …, `env.json`); with the
 * synthesised template, the env-vars file gets each function's own endpoint.
 */
export function renderEvents(
  demo: object,
  from = EVENTS_DIR,
  stackTemplate?: Template,
): Map<string, unknown> {
  const variables = templateVariables(demo);
  const rendered = new Map<string, unknown>();
  for (const file of readdirSync(from)
    .filter((name) => name.endsWith('.json'))
    .sort()) {
    const template = JSON.parse(readFileSync(join(from, file), 'utf8'));
    const content = renderTemplate(template, variables, join('events', file)) as Record<string, unknown>;
    if (file === ENV_VARS_FILE && stackTemplate)
      Object.assign(content, functionEndpointSections(demo, stackTemplate));
    rendered.set(file, content);
  }
  return rendered;
}

/** Writes the rendered files into `to` and returns their paths. */
export function writeRenderedEvents(
  demo: object,
  to = RENDERED_DIR,
  from = EVENTS_DIR,
  stackTemplate?: Template,
) {
  mkdirSync(to, { recursive: true });
  return [...renderEvents(demo, from, stackTemplate)].map(([file, content]) => {
    const path = join(to, file);
    writeFileSync(path, `${JSON.stringify(content, null, 2)}\n`);
    return path;
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'secrets-manager': { type: 'string' }, sqs: { type: 'string' } },
  });
  let demo: Record<string, unknown>;
  try {
    demo = JSON.parse(readFileSync(DEMO_FILE, 'utf8'));
  } catch {
    throw new Error(
      `${DEMO_FILE} not found or unreadable: run \`npm start\` first (it writes the demo data)`,
    );
  }
  if (!existsSync(TEMPLATE_FILE)) throw new Error(`${TEMPLATE_FILE} not found: run \`npm run synth\` first`);
  const secrets = values['secrets-manager'];
  if (secrets) {
    demo.secrets_manager_endpoint = secrets;
    demo.webhook_key_set_arn = await storeKeySet(secrets, readFileSync(KEYS_FILE, 'utf8'));
  }
  if (values.sqs) {
    demo.sqs_endpoint = values.sqs;
    demo.delivery_queue_url = await createDeliveryQueue(values.sqs);
  }
  const written = writeRenderedEvents(
    demo,
    RENDERED_DIR,
    EVENTS_DIR,
    JSON.parse(readFileSync(TEMPLATE_FILE, 'utf8')),
  );
  console.log(
    `Rendered ${written.length} files into ${RENDERED_DIR} from the demo data of ${demo.base_url}:`,
  );
  for (const path of written) console.log(`  ${path}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();

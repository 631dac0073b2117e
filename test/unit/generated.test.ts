import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { GENERATED_DIR, generate, OPERATIONS_DOC, staleFiles } from '#scripts/generate.ts';
import {
  componentValidators,
  createSchemaAjv,
  loadOpenApi,
  operations,
  responseSchema,
  responseSchemaNames,
  schemaFor,
} from '#scripts/openapi.ts';
import { operationsMarkdown } from '#scripts/operations-doc.ts';

const UUID = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const NOW = '2026-11-22T08:00:00.000Z';

describe('generated files', () => {
  // Generating takes seconds (Ajv standalone, openapi-typescript): once for the whole file.
  let generated: ReturnType<typeof generate> | undefined;
  const generatedOnce = () => {
    generated ??= generate();
    return generated;
  };

  it('are up to date with the OpenAPI document', async () => {
    expect(await staleFiles(await generatedOnce())).toEqual([]);
  }, 60_000);

  it('docs/operations.md is among them: a changed summary in the document makes the check fail', async () => {
    const files = await generatedOnce();
    const page = files.find((file) => file.path === OPERATIONS_DOC);
    expect(page?.contents).toBe(readFileSync(OPERATIONS_DOC, 'utf8'));
    // Every operation is on the page, by its operationId, method and path.
    for (const { method, path, operation } of operations()) {
      expect(page?.contents).toContain(
        `(\`${operation.operationId}\`) | \`${method.toUpperCase()} ${path}\``,
      );
    }
    // The YAML as it would be after editing one summary, the page left as committed.
    const edited = structuredClone(loadOpenApi());
    const createSubscription = edited.paths['/v1/subscriptions/']?.post;
    if (!createSubscription) throw new Error('no createSubscription in the document');
    createSubscription.summary = 'Subscribe a customer to a free product';
    const regenerated = files.map((file) =>
      file.path === OPERATIONS_DOC ? { ...file, contents: operationsMarkdown(edited) } : file,
    );
    expect(await staleFiles(regenerated)).toEqual(['docs/operations.md']);
    expect(operationsMarkdown(edited)).toContain(
      '| Subscribe a customer to a free product (`createSubscription`)',
    );
  }, 60_000);

  it('validators.js is pure ESM and bundles with esbuild', async () => {
    const path = join(GENERATED_DIR, 'validators.js');
    expect(readFileSync(path, 'utf8')).not.toContain('require(');
    const result = await build({
      entryPoints: [path],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'node',
    });
    expect(result.errors).toEqual([]);
  });

  it('schemas.json holds the request schemas and every response body schema', () => {
    const schemas = JSON.parse(readFileSync(join(GENERATED_DIR, 'schemas.json'), 'utf8')) as Record<
      string,
      object
    >;
    // One request schema per part of each operation that carries input: its body, its query, its path.
    const shared =
      (loadOpenApi().components as { parameters?: Record<string, { in: string }> }).parameters ?? {};
    const requestParts = operations().flatMap(({ operation }) => {
      const base = operation.operationId.charAt(0).toUpperCase() + operation.operationId.slice(1);
      const places = new Set(
        (operation.parameters ?? []).map((parameter) =>
          '$ref' in parameter ? shared[parameter.$ref.split('/').at(-1) as string]?.in : parameter.in,
        ),
      );
      return [
        ...(operation.requestBody ? [`${base}Body`] : []),
        ...(places.has('query') ? [`${base}Query`] : []),
        ...(places.has('path') ? [`${base}Path`] : []),
      ];
    });
    expect(requestParts.length).toBeGreaterThanOrEqual(operations().length);
    const expected = [...requestParts, ...responseSchemaNames()];
    expect(Object.keys(schemas).sort()).toEqual(expected.sort());
    for (const schema of Object.values(schemas))
      expect(() => createSchemaAjv().compile(schema)).not.toThrow();
    expect(JSON.stringify(schemas)).not.toContain('#/components/');
  });
});

describe('response schemas', () => {
  it('every component schema compiles with Ajv 2020 in strict mode', () => {
    const validator = componentValidators();
    for (const name of Object.keys(loadOpenApi().components.schemas)) {
      expect(() => validator(name), name).not.toThrow();
    }
  });

  const customer = {
    id: UUID(1),
    created_at: NOW,
    modified_at: null,
    metadata: {},
    external_id: null,
    email: 'customer@example.com',
    email_verified: false,
    type: 'individual',
    name: null,
    billing_name: null,
    billing_address: { line1: null, line2: null, postal_code: null, city: null, state: null, country: 'FR' },
    tax_id: ['FR61954506077', 'eu_vat'],
    locale: null,
    organization_id: UUID(2),
    default_payment_method_id: null,
    deleted_at: null,
    first_user_event_at: null,
    avatar_url: null,
  };
  const price = {
    created_at: NOW,
    modified_at: null,
    id: UUID(3),
    source: 'catalog',
    amount_type: 'fixed',
    price_currency: 'usd',
    tax_behavior: null,
    is_archived: false,
    product_id: UUID(4),
    price_amount: 0,
  };
  const product = {
    id: UUID(4),
    created_at: NOW,
    modified_at: null,
    trial_interval: null,
    trial_interval_count: null,
    name: 'Free plan',
    description: null,
    visibility: 'public',
    recurring_interval: 'month',
    recurring_interval_count: 1,
    meter_interval: null,
    meter_interval_count: null,
    is_recurring: true,
    is_archived: false,
    organization_id: UUID(2),
    metadata: {},
    prices: [price],
    benefits: [],
    medias: [],
    attached_custom_fields: [],
  };
  const subscription = {
    created_at: NOW,
    modified_at: null,
    id: UUID(5),
    amount: 0,
    currency: 'usd',
    recurring_interval: 'month',
    recurring_interval_count: 1,
    status: 'active',
    current_period_start: NOW,
    current_period_end: '2026-12-22T08:00:00.000Z',
    current_meter_period_start: null,
    current_meter_period_end: null,
    trial_start: null,
    trial_end: null,
    cancel_at_period_end: false,
    canceled_at: null,
    started_at: NOW,
    ends_at: null,
    ended_at: null,
    pause_at_period_end: false,
    paused_at: null,
    resumes_at: null,
    customer_id: UUID(1),
    product_id: UUID(4),
    discount_id: null,
    checkout_id: null,
    customer_cancellation_reason: null,
    customer_cancellation_comment: null,
    metadata: { plan: 'free' },
    customer,
    product,
    discount: null,
    prices: [price],
    meters: [],
    pending_update: null,
  };

  it('accepts a Subscription with every required key', () => {
    const validate = createSchemaAjv().compile(responseSchema('createSubscription', 201));
    expect(validate(subscription), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...subscription, seats: null, custom_field_data: {}, past_due_at: null })).toBe(true);
  });

  it('accepts legacy prices, compatibility fields and every discount variant', () => {
    const validate = createSchemaAjv().compile(schemaFor('Subscription'));
    const legacy = { ...price, type: 'recurring', recurring_interval: 'month', legacy: true };
    const current = { ...price, type: 'recurring', recurring_interval: 'month', legacy: false };
    const discountBase = {
      created_at: NOW,
      modified_at: null,
      id: UUID(6),
      metadata: {},
      name: 'Launch',
      code: null,
      starts_at: null,
      ends_at: null,
      max_redemptions: null,
      max_redemptions_per_customer: null,
      redemptions_count: 0,
      organization_id: UUID(2),
    };
    const discounts = [
      {
        ...discountBase,
        duration: 'once',
        type: 'fixed',
        amount: 500,
        currency: 'usd',
        amounts: { usd: 500 },
      },
      {
        ...discountBase,
        duration: 'repeating',
        duration_in_months: 3,
        type: 'fixed',
        amount: 5,
        currency: 'usd',
        amounts: {},
      },
      { ...discountBase, duration: 'forever', type: 'percentage', basis_points: 1000 },
      {
        ...discountBase,
        duration: 'repeating',
        duration_in_months: 3,
        type: 'percentage',
        basis_points: 1000,
      },
    ];
    for (const discount of discounts) {
      const data = { ...subscription, prices: [legacy, current], discount, discount_id: discount.id };
      expect(validate(data), JSON.stringify(validate.errors)).toBe(true);
    }
  });

  it('rejects a Subscription missing a required key, a bad id or a null in a non-nullable field', () => {
    const validate = createSchemaAjv().compile(schemaFor('Subscription'));
    const { pending_update: _, ...missing } = subscription;
    expect(validate(missing)).toBe(false);
    expect(validate({ ...subscription, id: 'c232ab00-9414-11ec-b3c8-9f6bdeced846' })).toBe(false);
    expect(validate({ ...subscription, customer: { ...customer, email_verified: null } })).toBe(false);
    expect(validate({ ...subscription, created_at: '2026-11-22 08:00' })).toBe(false);
  });

  it('OAuth2ClientRegistration carries a secret exactly for confidential clients', () => {
    const validate = createSchemaAjv().compile(responseSchema('createClient', 201));
    const client = {
      redirect_uris: ['https://example.com/cb'],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'openid',
      client_name: 'Example',
      default_sub_type: 'organization',
      client_id: 'polar_ci_abc',
      client_secret: 'polar_cs_abc',
      client_id_issued_at: 1_800_000_000,
      client_secret_expires_at: 0,
      registration_access_token: 'polar_crt_abc',
      registration_client_uri: 'https://api.example.com/v1/oauth2/register/polar_ci_abc',
    };
    expect(validate(client)).toBe(true);
    // RFC 7592's two fields are part of every registration.
    const { registration_access_token: _token, ...withoutToken } = client;
    expect(validate(withoutToken)).toBe(false);
    const { client_secret: _secret, client_secret_expires_at: _expires, ...publicClient } = client;
    expect(validate({ ...publicClient, token_endpoint_auth_method: 'none' })).toBe(true);
    expect(validate(publicClient)).toBe(false);
    expect(validate({ ...client, token_endpoint_auth_method: 'none' })).toBe(false);
  });

  it('OAuth2ClientInformation (RFC 7592 reads) never carries the client secret or the registration token', () => {
    const validate = createSchemaAjv().compile(responseSchema('getClient', 200));
    const information = {
      redirect_uris: ['https://example.com/cb'],
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid',
      client_name: 'Example',
      default_sub_type: 'organization',
      client_id: 'polar_ci_abc',
      client_id_issued_at: 1_800_000_000,
      client_secret_expires_at: 0,
      registration_client_uri: 'https://api.example.com/v1/oauth2/register/polar_ci_abc',
    };
    expect(validate(information)).toBe(true);
    expect(validate({ ...information, client_secret: 'polar_cs_abc' })).toBe(false);
    expect(validate({ ...information, registration_access_token: 'polar_crt_abc' })).toBe(false);
  });

  it('error bodies match their schemas', () => {
    const ajv = createSchemaAjv();
    const detail = [
      { loc: ['body', 'product_id'], msg: 'Product does not exist.', type: 'value_error', input: UUID(9) },
    ];
    const unprocessable = ajv.compile(responseSchema('createSubscription', 422));
    expect(unprocessable({ error: 'PolarRequestValidationError', detail })).toBe(true);
    expect(unprocessable({ error: 'RequestValidationError', detail })).toBe(true);
    expect(unprocessable({ error: 'Other', detail })).toBe(false);
    expect(
      ajv.compile(responseSchema('deleteWebhookEndpoint', 404))({
        error: 'ResourceNotFound',
        detail: 'Not found',
      }),
    ).toBe(true);
    const unauthorized = ajv.compile(responseSchema('listWallets', 401));
    expect(unauthorized({ error: 'Unauthorized', detail: 'Unauthorized' })).toBe(true);
    expect(unauthorized({ error: 'invalid_token', error_description: 'The token is expired.' })).toBe(true);
    expect(
      ajv.compile(responseSchema('createClient', 400))({
        error: 'invalid_redirect_uri',
        error_description: 'x',
      }),
    ).toBe(true);
  });

  it('accepts a page of wallets', () => {
    const validate = createSchemaAjv().compile(responseSchema('ListResourceCustomerWallet'));
    const wallet = {
      id: UUID(7),
      created_at: NOW,
      modified_at: null,
      customer_id: UUID(1),
      balance: -120,
      currency: 'usd',
    };
    expect(validate({ items: [wallet], pagination: { total_count: 1, max_page: 1 } })).toBe(true);
    expect(validate({ items: [], pagination: { total_count: 0, max_page: 0 } })).toBe(true);
    expect(
      validate({ items: [{ ...wallet, balance: 1.5 }], pagination: { total_count: 1, max_page: 1 } }),
    ).toBe(false);
  });
});

/**
 * Reads `shared/openapi/commerce-api.yaml` and derives self-contained JSON
 * Schemas (draft 2020-12) from it. Used by the generator and by tests, which
 * compile response validators from the same document at test time.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020, { type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

export const OPENAPI_PATH = fileURLToPath(new URL('../shared/openapi/commerce-api.yaml', import.meta.url));

export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

export type JsonSchema = { [keyword: string]: unknown };

interface ParameterObject {
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema: JsonSchema;
}

interface ResponseObject {
  description: string;
  content?: Record<string, { schema: JsonSchema }>;
}

export interface OperationObject {
  operationId: string;
  parameters?: (ParameterObject | { $ref: string })[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, ResponseObject | { $ref: string }>;
  [key: string]: unknown;
}

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  paths: Record<string, Record<string, OperationObject>>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters?: Record<string, ParameterObject>;
    responses?: Record<string, ResponseObject>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

const COMPONENT_SCHEMA_PREFIX = '#/components/schemas/';
const DEFS_PREFIX = '#/$defs/';

let cached: OpenApiDocument | undefined;

/** The parsed document (cached; treat it as read-only). */
export function loadOpenApi(): OpenApiDocument {
  cached ??= parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenApiDocument;
  return cached;
}

// Keywords whose value is one subschema, a list of subschemas, or a name → subschema map.
const SUBSCHEMA = new Set([
  'not',
  'if',
  'then',
  'else',
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const SUBSCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SUBSCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas']);
// OpenAPI-only keywords that are not JSON Schema (Ajv strict mode rejects them).
const OPENAPI_ONLY = new Set(['discriminator', 'xml', 'externalDocs', 'example']);

const mapValues = <T, U>(record: Record<string, T>, fn: (value: T) => U): Record<string, U> =>
  Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]));

/**
 * Copies an OpenAPI schema object as plain JSON Schema: component refs point at
 * `#/$defs/…`, OpenAPI-only keywords and `x-` extensions are dropped. Values of
 * `const`, `enum`, `default` and `examples` are data and copied as they are.
 */
export function toJsonSchema(schema: JsonSchema): JsonSchema;
export function toJsonSchema(schema: JsonSchema | boolean): JsonSchema | boolean;
export function toJsonSchema(schema: JsonSchema | boolean): JsonSchema | boolean {
  if (typeof schema === 'boolean') return schema;
  const out: JsonSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (OPENAPI_ONLY.has(keyword) || keyword.startsWith('x-')) continue;
    if (keyword === '$ref' && typeof value === 'string' && value.startsWith(COMPONENT_SCHEMA_PREFIX)) {
      out.$ref = DEFS_PREFIX + value.slice(COMPONENT_SCHEMA_PREFIX.length);
    } else if (SUBSCHEMA.has(keyword)) {
      out[keyword] = toJsonSchema(value as JsonSchema | boolean);
    } else if (SUBSCHEMA_LIST.has(keyword)) {
      out[keyword] = (value as JsonSchema[]).map(toJsonSchema);
    } else if (SUBSCHEMA_MAP.has(keyword)) {
      out[keyword] = mapValues(value as Record<string, JsonSchema>, toJsonSchema);
    } else {
      out[keyword] = structuredClone(value);
    }
  }
  return out;
}

function collectRefs(schema: unknown, into: Set<string>): void {
  if (Array.isArray(schema)) {
    for (const item of schema) collectRefs(item, into);
  } else if (schema !== null && typeof schema === 'object') {
    for (const [keyword, value] of Object.entries(schema)) {
      if (keyword === 'const' || keyword === 'enum' || keyword === 'default' || keyword === 'examples')
        continue;
      if (keyword === '$ref' && typeof value === 'string' && value.startsWith(DEFS_PREFIX)) {
        into.add(value.slice(DEFS_PREFIX.length));
      } else {
        collectRefs(value, into);
      }
    }
  }
}

const refsOf = (schema: JsonSchema): Set<string> => {
  const found = new Set<string>();
  collectRefs(schema, found);
  return found;
};

const refsByComponent = new Map<string, Set<string>>();

/** Names of the components a component refers to directly (memoised). */
function componentRefs(name: string): Set<string> {
  let refs = refsByComponent.get(name);
  if (!refs) {
    refs = refsOf(componentSchema(name));
    refsByComponent.set(name, refs);
  }
  return refs;
}

const converted = new Map<string, JsonSchema>();

/** A component schema converted by `toJsonSchema` (memoised; callers get their own copy). */
function componentSchema(name: string): JsonSchema {
  let schema = converted.get(name);
  if (!schema) {
    const source = loadOpenApi().components.schemas[name];
    if (!source) throw new Error(`No component schema named ${name}`);
    schema = toJsonSchema(source);
    converted.set(name, schema);
  }
  return structuredClone(schema);
}

/** Wraps a converted schema with `$schema`, a title and the `$defs` it reaches (sorted by name). */
function selfContained(title: string, root: JsonSchema): JsonSchema {
  const reached = new Set<string>();
  const pending = [refsOf(root)];
  while (pending.length > 0) {
    for (const name of pending.pop() ?? []) {
      if (reached.has(name)) continue;
      reached.add(name);
      pending.push(componentRefs(name));
    }
  }
  const defs = [...reached].sort().map((name) => [name, componentSchema(name)] as const);
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title,
    ...root,
    ...(defs.length > 0 ? { $defs: Object.fromEntries(defs) } : {}),
  };
}

/** A schema that is only a component `$ref` is replaced by that component (converted), so the root is not a bare ref. */
function inlineRef(schema: JsonSchema): JsonSchema {
  const keys = Object.keys(schema);
  if (
    keys.length === 1 &&
    typeof schema.$ref === 'string' &&
    schema.$ref.startsWith(COMPONENT_SCHEMA_PREFIX)
  ) {
    return componentSchema(schema.$ref.slice(COMPONENT_SCHEMA_PREFIX.length));
  }
  return toJsonSchema(schema);
}

const pascalCase = (id: string): string => id.charAt(0).toUpperCase() + id.slice(1);

/** Every operation of the document, in document order. */
export function operations(): { method: string; path: string; operation: OperationObject }[] {
  return Object.entries(loadOpenApi().paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method, path, operation })),
  );
}

function operation(operationId: string): OperationObject {
  const found = operations().find(({ operation: op }) => op.operationId === operationId);
  if (!found) throw new Error(`No operation ${operationId}`);
  return found.operation;
}

function resolveParameter(parameter: ParameterObject | { $ref: string }): ParameterObject {
  if (!('$ref' in parameter)) return parameter;
  const name = parameter.$ref.replace('#/components/parameters/', '');
  const resolved = loadOpenApi().components.parameters?.[name];
  if (!resolved) throw new Error(`Unresolvable parameter ${parameter.$ref}`);
  return resolved;
}

function parametersSchema(parameters: ParameterObject[]): JsonSchema {
  const required = parameters.filter((p) => p.required).map((p) => p.name);
  return {
    type: 'object',
    properties: Object.fromEntries(
      parameters.map((p) => [
        p.name,
        toJsonSchema(
          p.description && !p.schema.description ? { ...p.schema, description: p.description } : p.schema,
        ),
      ]),
    ),
    ...(required.length > 0 ? { required } : {}),
  };
}

/** The media types a request body may have: JSON, or a form (the OAuth token, revocation and introspection endpoints). */
export const BODY_MEDIA_TYPES = ['application/json', 'application/x-www-form-urlencoded'] as const;

/** An operation's request body: its one media type and schema. */
export function requestBodyOf(op: OperationObject): { mediaType: string; schema: JsonSchema } | undefined {
  for (const mediaType of BODY_MEDIA_TYPES) {
    const schema = op.requestBody?.content[mediaType]?.schema;
    if (schema) return { mediaType, schema };
  }
  return undefined;
}

/**
 * The request schemas the API validates, keyed by name: `<OperationId>Body`
 * for JSON or form bodies, `<OperationId>Query` and `<OperationId>Path` for
 * parameters (an object of the parameters by name). Header parameters are not
 * part of them.
 */
export function requestSchemas(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const { operation: op } of operations()) {
    const base = pascalCase(op.operationId);
    const body = requestBodyOf(op)?.schema;
    if (body) out[`${base}Body`] = selfContained(`${base}Body`, inlineRef(body));
    const parameters = (op.parameters ?? []).map(resolveParameter);
    for (const [location, suffix] of [
      ['query', 'Query'],
      ['path', 'Path'],
    ] as const) {
      const inLocation = parameters.filter((p) => p.in === location);
      if (inLocation.length > 0) {
        out[`${base}${suffix}`] = selfContained(`${base}${suffix}`, parametersSchema(inLocation));
      }
    }
  }
  return out;
}

function resolveResponse(response: ResponseObject | { $ref: string }): ResponseObject {
  if (!('$ref' in response)) return response;
  const name = response.$ref.replace('#/components/responses/', '');
  const resolved = loadOpenApi().components.responses?.[name];
  if (!resolved) throw new Error(`Unresolvable response ${response.$ref}`);
  return resolved;
}

/** Names of the component schemas that are (or are alternatives of) a response body. */
export function responseSchemaNames(): string[] {
  const names = new Set<string>();
  for (const { operation: op } of operations()) {
    for (const response of Object.values(op.responses)) {
      const schema = resolveResponse(response).content?.['application/json']?.schema;
      if (!schema) continue;
      const branches = (schema.anyOf ?? schema.oneOf ?? [schema]) as JsonSchema[];
      for (const branch of branches) {
        if (typeof branch.$ref === 'string') names.add(branch.$ref.replace(COMPONENT_SCHEMA_PREFIX, ''));
      }
    }
  }
  return [...names].sort();
}

/** Self-contained JSON Schema of a component schema (`Subscription`) or a request schema (`CreateClientBody`). */
export function schemaFor(name: string): JsonSchema {
  if (loadOpenApi().components.schemas[name]) return selfContained(name, componentSchema(name));
  const request = requestSchemas()[name];
  if (!request) throw new Error(`No component or request schema named ${name}`);
  return request;
}

export const DOCUMENT_SCHEMA_ID = 'commerce-api';

/** Every component schema under `$defs`, in one schema (add it to Ajv once, compile `commerce-api#/$defs/<Name>`). */
export function documentSchema(): JsonSchema {
  const names = Object.keys(loadOpenApi().components.schemas).sort();
  return {
    $schema: JSON_SCHEMA_DIALECT,
    $id: DOCUMENT_SCHEMA_ID,
    $defs: Object.fromEntries(names.map((name) => [name, componentSchema(name)])),
  };
}

/**
 * Validators of component schemas from one Ajv instance holding the whole
 * document, so shared parts compile once: `const validate = validators('Subscription')`.
 */
export function componentValidators(ajv: Ajv2020 = createSchemaAjv()): (name: string) => ValidateFunction {
  ajv.addSchema(documentSchema());
  return (name) => {
    const validate = ajv.getSchema(`${DOCUMENT_SCHEMA_ID}#/$defs/${name}`);
    if (!validate) throw new Error(`No component schema named ${name}`);
    return validate;
  };
}

/**
 * Schema of a response body: `responseSchema('Subscription')` for a component
 * schema, or `responseSchema('createSubscription', 201)` for what an
 * operation documents under that status (alternatives included).
 */
export function responseSchema(name: string): JsonSchema;
export function responseSchema(operationId: string, status: number | string): JsonSchema;
export function responseSchema(nameOrOperationId: string, status?: number | string): JsonSchema {
  if (status === undefined) return schemaFor(nameOrOperationId);
  const response = operation(nameOrOperationId).responses[String(status)];
  if (!response) throw new Error(`${nameOrOperationId} documents no ${status} response`);
  const schema = resolveResponse(response).content?.['application/json']?.schema;
  if (!schema) throw new Error(`${nameOrOperationId} ${status} has no JSON body`);
  return selfContained(`${pascalCase(nameOrOperationId)}${status}`, inlineRef(schema));
}

/**
 * Ajv configured as the project uses it: draft 2020-12, strict, all errors,
 * formats from ajv-formats (full mode). Lengths count code points (Ajv's
 * default `unicode` handling).
 */
export function createSchemaAjv(options: Options = {}): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true, ...options });
  addFormats(ajv, { mode: 'full', formats: ['uri', 'uuid', 'date-time'] });
  return ajv;
}

// ---------------------------------------------------------------------------
// The route table's source: each operation's method, path, function and security, from the document.
// ---------------------------------------------------------------------------

/** The credential each security scheme of the document stands for (shared/domain/principals.ts). */
export const CREDENTIAL_OF_SCHEME = {
  pat: 'personal_access_token',
  registration: 'registration_access_token',
  customer_session: 'customer_session',
  client_basic: 'oauth_client',
} as const;

export interface RouteOperation {
  operationId: string;
  method: string;
  path: string;
  /** Folder under `functions/`: `x-function`, or the kebab-case of the operationId. */
  name: string;
  entry: string;
  /** From the operation's `security`: the one scheme it names (an empty requirement `{}` aside). */
  credential: (typeof CREDENTIAL_OF_SCHEME)[keyof typeof CREDENTIAL_OF_SCHEME];
  /** Any one of these scopes is enough (the requirements are alternatives); empty: none required. */
  scopes: string[];
}

const kebabCase = (id: string): string => id.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/** Every operation of a document (this one by default) as the route table lists it, in document order. */
export function routeOperations(document: OpenApiDocument = loadOpenApi()): RouteOperation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => {
      const { operationId } = operation;
      const requirements = (operation.security ?? document.security ?? []) as Record<string, string[]>[];
      const schemes = [...new Set(requirements.flatMap((requirement) => Object.keys(requirement)))];
      const [scheme] = schemes;
      if (schemes.length !== 1 || !scheme || !(scheme in CREDENTIAL_OF_SCHEME))
        throw new Error(
          `${operationId}: security must name one scheme of ${Object.keys(CREDENTIAL_OF_SCHEME)}`,
        );
      const name =
        typeof operation['x-function'] === 'string' ? operation['x-function'] : kebabCase(operationId);
      return {
        operationId,
        method: method.toUpperCase(),
        path,
        name,
        entry: `functions/${name}/handler.ts`,
        credential: CREDENTIAL_OF_SCHEME[scheme as keyof typeof CREDENTIAL_OF_SCHEME],
        scopes: [...new Set(requirements.flatMap((requirement) => requirement[scheme] ?? []))],
      };
    }),
  );
}

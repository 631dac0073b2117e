/**
 * What a deploy rehearsal on moto shows, computed from the synthesised template (what the stack
 * declares) and what moto answers (what it made of it). Pure functions; scripts/deploy-rehearsal.ts
 * does the I/O.
 *
 * moto's CloudFormation skips a resource type it has no model for: it logs "No Moto CloudFormation
 * support for <type>", still reports the stack CREATE_COMPLETE, and lists the resource without a
 * logical id or type. So a resource is created, not modelled by moto (missing, and moto said it
 * cannot model the type), or missing (a failure).
 */
import type { StackResourceSummary } from '@aws-sdk/client-cloudformation';
import type {
  ContinuousBackupsDescription,
  KeySchemaElement,
  Projection,
  TableDescription,
  TimeToLiveDescription,
} from '@aws-sdk/client-dynamodb';

// biome-ignore lint/suspicious/noExplicitAny: template JSON is untyped; each use reads a known shape.
type Json = any;

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, Json>;
  DeletionPolicy?: string;
}

export interface Template {
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, Json>;
}

const UNSUPPORTED = /No Moto CloudFormation support for (\S+)/g;

/** The resource types moto said it cannot create, from its log. */
export function unsupportedTypes(motoLog: string): Set<string> {
  return new Set([...motoLog.matchAll(UNSUPPORTED)].map((match) => match[1] as string));
}

/** Logical ids a value refers to through Ref, Fn::GetAtt or Fn::Sub (pseudo parameters excluded). */
export function referencesOf(value: Json): Set<string> {
  const found = new Set<string>();
  const add = (id: string) => {
    if (!id.startsWith('AWS::')) found.add(id.split('.')[0] as string);
  };
  const visit = (node: Json) => {
    if (Array.isArray(node)) {
      node.forEach(visit);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, child] of Object.entries(node)) {
      if (key === 'Ref' && typeof child === 'string') add(child);
      else if (key === 'Fn::GetAtt') add(Array.isArray(child) ? String(child[0]) : String(child));
      else if (key === 'Fn::Sub') {
        const [text, variables] = Array.isArray(child) ? child : [child, {}];
        for (const [, name] of String(text).matchAll(/\$\{([^}!]+)\}/g)) {
          if (!Object.hasOwn(variables ?? {}, name as string)) add(name as string);
        }
        visit(variables);
      } else visit(child);
    }
  };
  visit(value);
  return found;
}

export interface ResourceRow {
  type: string;
  declared: number;
  created: number;
  notModelled: number;
  missing: number;
  /** Created resources of this type that refer to resources moto did not create, and to which types. */
  referToSkipped: number;
  skippedTargets: string[];
}

export interface ResourceReport {
  rows: ResourceRow[];
  /** Logical ids moto did not create because it cannot model their type. */
  notModelled: string[];
  /** Entries ListStackResources returned without a logical id: moto's placeholders for skipped ones. */
  anonymousEntries: number;
  failures: string[];
}

export function resourceReport(
  template: Template,
  summaries: readonly StackResourceSummary[],
  unsupported: ReadonlySet<string>,
): ResourceReport {
  const byId = new Map(summaries.filter((s) => s.LogicalResourceId).map((s) => [s.LogicalResourceId, s]));
  const rows = new Map<string, ResourceRow>();
  const failures: string[] = [];
  const notModelled: string[] = [];
  const created: string[] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    const row = rows.get(resource.Type) ?? {
      type: resource.Type,
      declared: 0,
      created: 0,
      notModelled: 0,
      missing: 0,
      referToSkipped: 0,
      skippedTargets: [],
    };
    rows.set(resource.Type, row);
    row.declared++;
    const summary = byId.get(id);
    if (summary) {
      if (summary.ResourceType !== resource.Type) {
        failures.push(`${id}: deployed as ${summary.ResourceType}, declared ${resource.Type}`);
      }
      if (summary.ResourceStatus === 'CREATE_COMPLETE') {
        row.created++;
        created.push(id);
      } else {
        failures.push(`${id} (${resource.Type}) is ${summary.ResourceStatus}`);
      }
    } else if (unsupported.has(resource.Type)) {
      row.notModelled++;
      notModelled.push(id);
    } else {
      row.missing++;
      failures.push(`${id} (${resource.Type}) was not created, and moto did not say it cannot model it`);
    }
  }
  const skipped = new Set(notModelled);
  for (const id of created) {
    const resource = template.Resources[id] as TemplateResource;
    const targets = [...referencesOf(resource.Properties ?? {})].filter((ref) => skipped.has(ref));
    if (targets.length === 0) continue;
    const row = rows.get(resource.Type) as ResourceRow;
    row.referToSkipped++;
    for (const target of targets) {
      const type = template.Resources[target]?.Type as string;
      if (!row.skippedTargets.includes(type)) row.skippedTargets.push(type);
    }
  }
  return {
    rows: [...rows.values()].sort((a, b) => a.type.localeCompare(b.type)),
    notModelled,
    anonymousEntries: summaries.filter((s) => !s.LogicalResourceId).length,
    failures,
  };
}

export type CheckStatus = 'ok' | 'mismatch' | 'not modelled';

export interface Check {
  name: string;
  expected: string;
  actual: string;
  status: CheckStatus;
}

/** Which table properties moto's CloudFormation applies, found by deploying a probe table. */
export interface MotoTableSupport {
  timeToLive: boolean;
  pointInTimeRecovery: boolean;
}

export interface DeployedTable {
  table: TableDescription;
  timeToLive?: TimeToLiveDescription;
  backups?: ContinuousBackupsDescription;
}

const keys = (schema: readonly KeySchemaElement[] | undefined) =>
  (schema ?? []).map((key) => `${key.AttributeName} ${key.KeyType}`).join(', ') || 'none';
const projection = (p: Projection | undefined) =>
  [p?.ProjectionType ?? 'none', ...(p?.NonKeyAttributes ?? []).toSorted()].join(' ');
const attributes = (definitions: readonly { AttributeName?: string; AttributeType?: string }[] = []) =>
  definitions
    .map((d) => `${d.AttributeName} ${d.AttributeType}`)
    .sort()
    .join(', ');

interface DeclaredIndex {
  IndexName: string;
  KeySchema: KeySchemaElement[];
  Projection?: Projection;
}
interface DeployedIndex {
  IndexName?: string;
  KeySchema?: KeySchemaElement[];
  Projection?: Projection;
}

function indexChecks(kind: string, declared: DeclaredIndex[] = [], deployed: DeployedIndex[] = []): Check[] {
  const names = (list: { IndexName?: string }[]) =>
    list
      .map((index) => index.IndexName as string)
      .sort()
      .join(', ') || 'none';
  const checks = [compare(`${kind} indexes`, names(declared), names(deployed))];
  for (const index of declared) {
    const twin = deployed.find((candidate) => candidate.IndexName === index.IndexName);
    checks.push(
      compare(
        `  ${index.IndexName}`,
        `${keys(index.KeySchema)}; projection ${projection(index.Projection)}`,
        twin ? `${keys(twin.KeySchema)}; projection ${projection(twin.Projection)}` : 'absent',
      ),
    );
  }
  return checks;
}

const compare = (name: string, expected: string, actual: string, modelled = true): Check => ({
  name,
  expected,
  actual,
  status: !modelled ? 'not modelled' : expected === actual ? 'ok' : 'mismatch',
});

/**
 * The deployed table against the template's `AWS::DynamoDB::Table` properties. A property moto's
 * CloudFormation does not apply is reported as not modelled whatever moto answers: even an answer that
 * happens to agree would prove nothing.
 */
export function tableChecks(
  declared: Record<string, Json>,
  deployed: DeployedTable,
  support: MotoTableSupport,
): Check[] {
  const { table, timeToLive, backups } = deployed;
  const ttl = declared.TimeToLiveSpecification as { AttributeName: string; Enabled: boolean } | undefined;
  const pitr = declared.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled === true;
  return [
    compare('key schema', keys(declared.KeySchema), keys(table.KeySchema)),
    compare(
      'attribute definitions',
      attributes(declared.AttributeDefinitions),
      attributes(table.AttributeDefinitions),
    ),
    compare(
      'billing mode',
      declared.BillingMode ?? 'PROVISIONED',
      table.BillingModeSummary?.BillingMode ?? (table.ProvisionedThroughput ? 'PROVISIONED' : 'unknown'),
    ),
    ...indexChecks('global', declared.GlobalSecondaryIndexes, table.GlobalSecondaryIndexes),
    ...indexChecks('local', declared.LocalSecondaryIndexes, table.LocalSecondaryIndexes),
    compare(
      'time to live',
      ttl?.Enabled ? `${ttl.AttributeName} ENABLED` : 'DISABLED',
      timeToLive?.TimeToLiveStatus === 'ENABLED' || timeToLive?.TimeToLiveStatus === 'ENABLING'
        ? `${timeToLive.AttributeName} ${timeToLive.TimeToLiveStatus}`
        : (timeToLive?.TimeToLiveStatus ?? 'unknown'),
      support.timeToLive,
    ),
    compare(
      'deletion protection',
      String(declared.DeletionProtectionEnabled === true),
      String(table.DeletionProtectionEnabled === true),
    ),
    compare(
      'point-in-time recovery',
      pitr ? 'ENABLED' : 'DISABLED',
      backups?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus ?? 'unknown',
      support.pointInTimeRecovery,
    ),
  ];
}

/** Left-aligned columns, two spaces apart. */
export function formatTable(header: string[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)];
}

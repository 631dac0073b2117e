/**
 * Meters: create, list, get, update (archive included). The definition rules (filter, aggregation)
 * are the pure ones of `shared/domain/meter.ts`; this module adds tenancy, the unit's rules, the
 * freeze of a meter that has billed an event, and the `meter.created` / `meter.updated` events,
 * each written in its change's own transaction (the outbox).
 */
import type { Table } from '../data/dynamo.ts';
import { type OperationAccess, oneStatement } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { parseListSorting, TooManyMatches } from '../data/listing.ts';
import {
  insertMeter,
  listMeterPage,
  MAX_ARCHIVED_PERIODS,
  MeterChanged,
  MeterPriced,
  type MeterRecord,
  type MeterSortField,
  type MeterUnit,
  access as metersAccess,
  getMeter as readMeter,
  replaceMeter,
} from '../data/meters.ts';
import { outboxWrites } from '../data/outbox.ts';
import type { Metadata } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import { canonicalJson } from '../domain/canonical-json.ts';
import {
  PolarRequestValidationError,
  ResourceNotFound,
  ServiceUnavailable,
  type ValidationIssue,
} from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import {
  definitionIssues,
  type MeterAggregation,
  type MeterFilter,
  normalizeAggregation,
  normalizeFilter,
} from '../domain/meter.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  ListMetersQuery,
  ListResourceMeter,
  Meter,
  MeterCreate,
  MeterUpdate,
} from '../generated/api-types.ts';
import type { Dependencies } from '../runtime.ts';
import { organizationFor } from './organizations.ts';
import { pageWindow, pagination, queryIssue, tooManyMatches, withinAnswerLimit } from './paging.ts';

/** A `query` prefix may match at most this many meters of one organization (each is read). */
export const MAX_QUERY_MATCHES = 1000;
/** Attempts when a concurrent update wins the race (each re-reads and re-applies this one). */
const ATTEMPTS = 5;
const FROZEN = "This field can't be updated because the meter is already aggregating events.";

export function presentMeter(meter: MeterRecord): Meter {
  return {
    metadata: meter.metadata,
    created_at: meter.created_at,
    modified_at: meter.modified_at,
    id: meter.id,
    name: meter.name,
    unit: meter.unit,
    custom_label: meter.custom_label,
    custom_multiplier: meter.custom_multiplier,
    filter: meter.filter,
    aggregation: meter.aggregation,
    organization_id: meter.organization_id,
    archived_at: meter.archived_at,
  } as Meter;
}

/** A meter's event: the meter as the API answers it, at `at`. */
const meterEvent = (table: Table, type: 'meter.created' | 'meter.updated', meter: MeterRecord, at: string) =>
  outboxWrites(
    table,
    { kind: 'meter', id: meter.id, organizationId: meter.organization_id },
    at,
    [{ type, data: presentMeter(meter) }],
    newId,
  );

const issue = (loc: string[], msg: string, input: unknown, type = 'value_error'): ValidationIssue => ({
  loc: ['body', ...loc],
  msg,
  type,
  input,
});

/** The definition's and the unit's rules on a meter as it would be stored. */
function checked(input: MeterRecord, touched: { filter: boolean; aggregation: boolean }): MeterRecord {
  // Normalized first: fields a body adds beyond the schema's are ignored, not stored or counted.
  const meter = {
    ...input,
    filter: touched.filter ? normalizeFilter(input.filter) : input.filter,
    aggregation: touched.aggregation ? normalizeAggregation(input.aggregation) : input.aggregation,
  };
  const issues: ValidationIssue[] = definitionIssues(
    touched.filter ? meter.filter : undefined,
    touched.aggregation ? meter.aggregation : undefined,
  ).map((i) => issue(i.loc, i.msg, i.input));
  if (meter.unit === 'custom' && meter.custom_label === null) {
    issues.push(issue(['custom_label'], "custom_label is required when unit is 'custom'.", null));
  }
  if (meter.unit !== 'custom' && meter.custom_label !== null) {
    issues.push(
      issue(
        ['custom_label'],
        "custom_label and custom_multiplier are only allowed when unit is 'custom'.",
        meter.custom_label,
      ),
    );
  }
  if (issues.length > 0) throw new PolarRequestValidationError(issues);
  return meter;
}

/** A new meter of an organization from a Create Meter body, every rule checked. */
export function newMeter(body: MeterCreate, organizationId: string, now: Date): MeterRecord {
  return checked(
    {
      id: newId(),
      organization_id: organizationId,
      name: body.name,
      unit: (body.unit ?? 'scalar') as MeterUnit,
      custom_label: body.custom_label ?? null,
      custom_multiplier: body.custom_multiplier ?? null,
      filter: body.filter as MeterFilter,
      aggregation: body.aggregation as MeterAggregation,
      metadata: (body.metadata ?? {}) as Metadata,
      created_at: now.toISOString(),
      modified_at: null,
      archived_at: null,
      archived_periods: [],
      last_billed_event_id: null,
      definition_version: 1,
      version: 1,
    },
    { filter: true, aggregation: true },
  );
}

/** Writes a new meter, its list entries and its `meter.created` event (Create Meter, the demo seed). */
export async function storeNewMeter(table: Table, meter: MeterRecord): Promise<void> {
  await insertMeter(table, meter, meterEvent(table, 'meter.created', meter, meter.created_at));
}

export async function createMeter(
  deps: Dependencies,
  principal: UserPrincipal,
  body: MeterCreate,
): Promise<Meter> {
  const organizationId = organizationFor(principal, body.organization_id);
  const meter = newMeter(body, organizationId, deps.now());
  await storeNewMeter(deps.table, meter);
  return presentMeter(meter);
}

/** A meter of one of the caller's organizations; anything else is the same 404. */
async function ownedMeter(deps: Dependencies, principal: UserPrincipal, id: string): Promise<MeterRecord> {
  const meter = await readMeter(deps.table, id);
  if (!meter || !principal.organizationIds.includes(meter.organization_id)) throw new ResourceNotFound();
  return meter;
}

export async function getMeter(deps: Dependencies, principal: UserPrincipal, id: string): Promise<Meter> {
  return presentMeter(await ownedMeter(deps, principal, normalizeId(id)));
}

export async function listMeters(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListMetersQuery,
): Promise<ListResourceMeter> {
  if (Object.keys(query.metadata ?? {}).length > 0) {
    throw new PolarRequestValidationError([
      queryIssue('metadata', 'Filtering meters by metadata is not supported by this API.', query.metadata),
    ]);
  }
  const window = pageWindow(query);
  const requested = query.organization_id?.map(normalizeId);
  const organizationIds = principal.organizationIds.filter((id) => !requested || requested.includes(id));
  try {
    const page = await listMeterPage(deps.table, {
      organizationIds,
      criteria: parseListSorting<MeterSortField>(query.sorting, ['name']),
      filter: typeof query.is_archived === 'boolean' ? { is_archived: String(query.is_archived) } : {},
      ...(query.query ? { namePrefix: { prefix: query.query, maxMatches: MAX_QUERY_MATCHES } } : {}),
      offset: window.offset,
      limit: window.limit,
    });
    return withinAnswerLimit({
      items: page.items.map(presentMeter),
      pagination: pagination(page.total, window),
    });
  } catch (error) {
    throw error instanceof TooManyMatches ? tooManyMatches('meters', error.limit, query.query) : error;
  }
}

/**
 * The meter as the body changes it. A meter that has billed an event refuses `filter` and
 * `aggregation` (even null, as the hosted service: the field is named), 422 `forbidden`.
 */
function applied(meter: MeterRecord, body: MeterUpdate, now: string): MeterRecord {
  if (meter.last_billed_event_id !== null) {
    const frozen = (['filter', 'aggregation'] as const)
      .filter((field) => body[field] !== undefined)
      .map((field) => issue([field], FROZEN, body[field], 'forbidden'));
    if (frozen.length > 0) throw new PolarRequestValidationError(frozen);
  }
  const archived =
    body.is_archived === true
      ? (meter.archived_at ?? now)
      : body.is_archived === false
        ? null
        : meter.archived_at;
  return checked(
    {
      ...meter,
      name: body.name ?? meter.name,
      unit: (body.unit ?? meter.unit) as MeterUnit,
      // A unit other than `custom` drops the label unless the body names one (then refused below).
      custom_label:
        body.custom_label != null
          ? body.custom_label
          : body.unit != null && body.unit !== 'custom'
            ? null
            : meter.custom_label,
      custom_multiplier: body.custom_multiplier ?? meter.custom_multiplier,
      filter: (body.filter ?? meter.filter) as MeterFilter,
      aggregation: (body.aggregation ?? meter.aggregation) as MeterAggregation,
      metadata: body.metadata === undefined ? meter.metadata : (body.metadata as Metadata),
      archived_at: archived,
      // An unarchive closes the archive: its period is kept, so that events that arrived in it stay
      // uncounted however late the consumer reaches them.
      archived_periods:
        meter.archived_at !== null && archived === null
          ? [...meter.archived_periods, { from: meter.archived_at, to: now }].slice(-MAX_ARCHIVED_PERIODS)
          : meter.archived_periods,
    },
    { filter: body.filter != null, aggregation: body.aggregation != null },
  );
}

/**
 * Updates a meter of one of the caller's organizations. The write is conditioned on the meter being
 * as read; when another change wins in between, this one is applied again on the fresh meter.
 */
export async function updateMeter(
  deps: Dependencies,
  principal: UserPrincipal,
  id: string,
  body: MeterUpdate,
): Promise<Meter> {
  const meterId = normalizeId(id);
  for (let attempt = 1; ; attempt++) {
    const meter = await ownedMeter(deps, principal, meterId);
    const now = deps.now().toISOString();
    const changed = applied(meter, body, now);
    if (canonicalJson(changed) === canonicalJson(meter)) return presentMeter(meter);
    // A new filter or aggregation is a new definition: the meter's counts restart under it.
    const redefined =
      canonicalJson(changed.filter) !== canonicalJson(meter.filter) ||
      canonicalJson(changed.aggregation) !== canonicalJson(meter.aggregation);
    const after = {
      ...changed,
      modified_at: now,
      version: meter.version + 1,
      definition_version: meter.definition_version + (redefined ? 1 : 0),
    };
    try {
      await replaceMeter(deps.table, meter, after, meterEvent(deps.table, 'meter.updated', after, now));
      return presentMeter(after);
    } catch (error) {
      if (error instanceof MeterPriced) {
        // As the hosted service: an archive of a meter that active products' prices still name.
        throw new PolarRequestValidationError([
          issue(['is_archived'], 'Cannot archive meter that is still attached to active products', true),
        ]);
      }
      if (!(error instanceof MeterChanged)) throw error;
      if (attempt === ATTEMPTS) throw new ServiceUnavailable();
    }
  }
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  createMeter: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...metersAccess.insertMeter,
    ],
  },
  listMeters: {
    table: [...tokensAccess.findToken, ...tokensAccess.findAccessToken, ...metersAccess.listMeterPage],
  },
  getMeter: {
    table: [oneStatement(tokensAccess.findToken, metersAccess.getMeter), ...tokensAccess.findAccessToken],
  },
  updateMeter: {
    table: [
      oneStatement(tokensAccess.findToken, metersAccess.getMeter),
      ...tokensAccess.findAccessToken,
      ...metersAccess.replaceMeter,
    ],
  },
});

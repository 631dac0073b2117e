/**
 * Usage events: Ingest Events, List Events, Get Event, List Event Names. The storage and why it is
 * shaped so: `shared/data/usage-events.ts` and docs/data-model.md (Usage events).
 */
import type { OperationAccess } from '../data/grants.ts';
import { access as idempotencyAccess } from '../data/idempotency.ts';
import { ListReadTooCostly, ReadBudget } from '../data/listing.ts';
import type { CustomerRecord } from '../data/records.ts';
import { access as tokensAccess } from '../data/tokens.ts';
import {
  countEventName,
  EVENT_LIST_SHARDS,
  EVENT_NAME_SHARDS,
  type EventNameCounts,
  getUsageEvent,
  putUsageEvent,
  readCustomers,
  readEventNames,
  readEventRange,
  type UsageEventRecord,
  usageEventId,
  access as usageEventsAccess,
} from '../data/usage-events.ts';
import { PolarRequestValidationError, ResourceNotFound, type ValidationIssue } from '../domain/errors.ts';
import { newId, normalizeId } from '../domain/ids.ts';
import type { UserPrincipal } from '../domain/principals.ts';
import type {
  Event,
  EventCreate,
  EventName,
  EventsIngestResponse,
  IngestEventsBody,
  ListEventNamesQuery,
  ListEventsQuery,
  ListResourceEvent,
  ListResourceEventName,
} from '../generated/api-types.ts';
import { logError } from '../observability/telemetry.ts';
import type { Dependencies } from '../runtime.ts';
import { pageWindow, pagination, withinAnswerLimit } from './paging.ts';
import { presentCustomer } from './presenters.ts';
import { refuseUnsupported } from './unsupported-filters.ts';

/** Events one Ingest Events request takes (the schema's `maxItems`). */
export const INGEST_BATCH_MAX = 1000;
/** Puts of one batch in flight at once (the SDK's default socket pool is 50). */
const PUTS_IN_FLIGHT = 32;
/** Without a time window, how deep a list can be paged (`page × limit`). */
export const EVENT_PAGE_DEPTH = 1000;
/** A 422 lists at most this many faults. */
const MAX_ISSUES = 100;

// ---------------------------------------------------------------------------
// Timestamps: kept to the microsecond (the hosted service stores microseconds).
// ---------------------------------------------------------------------------

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Microseconds since the epoch of an RFC 3339 time, or why it cannot be kept exactly. */
export function parseEventTime(text: string): number | { invalid: string } {
  const match = TIMESTAMP.exec(text);
  if (!match) return { invalid: 'Not an RFC 3339 date-time with an offset.' };
  const [, date, time, fraction = '', offset] = match;
  const seconds = Date.parse(`${date}T${time}${offset === 'z' ? 'Z' : offset}`);
  if (!Number.isFinite(seconds) || seconds % 1000 !== 0) return { invalid: 'Not a valid date-time.' };
  if (/[1-9]/.test(fraction.slice(6)))
    return { invalid: 'Timestamps are kept to the microsecond: at most 6 fractional digits that are not 0.' };
  const micros = seconds * 1000 + Number(fraction.slice(0, 6).padEnd(6, '0'));
  if (micros < 0) return { invalid: 'Timestamps before 1970 are not accepted.' };
  return micros;
}

/** ISO 8601 in UTC: milliseconds as every time here, microseconds when there are any. */
export function presentEventTime(micros: number): string {
  const iso = new Date(Math.floor(micros / 1000)).toISOString();
  const sub = micros % 1000;
  return sub === 0 ? iso : `${iso.slice(0, -1)}${String(sub).padStart(3, '0')}Z`;
}

const nowMicros = (deps: Pick<Dependencies, 'now'>): number => deps.now().getTime() * 1000;

// ---------------------------------------------------------------------------
// Ingest Events
// ---------------------------------------------------------------------------

interface Checked {
  index: number;
  event: EventCreate;
  organizationId: string;
  micros: number;
  customerId: string | null;
}

function organizationOf(
  principal: UserPrincipal,
  requested: string | null | undefined,
): string | ValidationIssue {
  if (requested) {
    const id = normalizeId(requested);
    return principal.organizationIds.includes(id)
      ? id
      : { loc: ['organization_id'], msg: 'Organization not found.', type: 'value_error', input: requested };
  }
  const [only, ...others] = principal.organizationIds;
  if (only !== undefined && others.length === 0) return only;
  return {
    loc: ['organization_id'],
    msg:
      only === undefined
        ? 'Organization not found.'
        : 'organization_id is required: you belong to several organizations.',
    type: only === undefined ? 'value_error' : 'missing',
    input: null,
  };
}

/** The rules one event breaks beyond its schema (its customer's existence is checked after). */
function checkEvent(
  principal: UserPrincipal,
  event: EventCreate,
  now: number,
): { issues: ValidationIssue[]; organizationId?: string; micros?: number } {
  const issues: ValidationIssue[] = [];
  const organization = organizationOf(principal, event.organization_id);
  if (typeof organization !== 'string') issues.push(organization);
  const hasId = event.customer_id !== undefined;
  const hasExternal = event.external_customer_id !== undefined;
  if (!hasId && !hasExternal) {
    issues.push({
      loc: ['customer_id'],
      msg: 'customer_id or external_customer_id is required.',
      type: 'missing',
      input: null,
    });
  } else if (hasId && hasExternal) {
    issues.push({
      loc: ['external_customer_id'],
      msg: 'Give customer_id or external_customer_id, not both.',
      type: 'value_error',
      input: event.external_customer_id,
    });
  }
  for (const field of ['parent_id', 'member_id', 'external_member_id'] as const) {
    if (event[field] !== undefined && event[field] !== null) {
      issues.push({
        loc: [field],
        msg: `${field} is not supported: events have no parents or members here.`,
        type: 'value_error',
        input: event[field],
      });
    }
  }
  let micros = now;
  if (event.timestamp !== undefined) {
    const parsed = parseEventTime(event.timestamp);
    if (typeof parsed !== 'number') {
      issues.push({ loc: ['timestamp'], msg: parsed.invalid, type: 'value_error', input: event.timestamp });
    } else if (parsed > now) {
      issues.push({
        loc: ['timestamp'],
        msg: 'Timestamp must be in the past.',
        type: 'value_error',
        input: event.timestamp,
      });
    } else {
      micros = parsed;
    }
  }
  return { issues, ...(typeof organization === 'string' ? { organizationId: organization } : {}), micros };
}

/** Runs `work` over `items` with at most `width` in flight, every one settled. */
async function settleAll<T, R>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const at = next++;
      try {
        results[at] = { status: 'fulfilled', value: await work(items[at] as T) };
      } catch (reason) {
        results[at] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/**
 * Stores a batch of events, all checked first: one invalid event refuses the batch (422 at
 * `["body","events",i,…]`) and nothing is written. Then one conditional put per distinct event
 * (duplicates of the batch and of earlier batches are counted, not written), then the batch's names
 * counted. A put that fails (throttled past the SDK's retries) fails the request with the contract's
 * 503 after every other put settled: the client retries the whole batch, whose events already
 * stored are then duplicates, so the events end up stored once each.
 */
export async function ingestEvents(
  deps: Dependencies,
  principal: UserPrincipal,
  body: IngestEventsBody,
): Promise<EventsIngestResponse> {
  const now = nowMicros(deps);
  const issues: ValidationIssue[] = [];
  const checked: Checked[] = [];
  body.events.forEach((event, index) => {
    const result = checkEvent(principal, event, now);
    for (const issue of result.issues)
      issues.push({ ...issue, loc: ['body', 'events', String(index), ...issue.loc] });
    if (result.issues.length === 0 && result.organizationId !== undefined && result.micros !== undefined) {
      checked.push({
        index,
        event,
        organizationId: result.organizationId,
        micros: result.micros,
        customerId: event.customer_id !== undefined ? normalizeId(event.customer_id) : null,
      });
    }
  });
  const named = checked.flatMap((entry) => (entry.customerId ? [entry.customerId] : []));
  const customers =
    named.length > 0 ? await readCustomers(deps.table, named) : new Map<string, CustomerRecord>();
  for (const entry of checked) {
    if (entry.customerId === null) continue;
    const customer = customers.get(entry.customerId);
    if (!customer || customer.deleted_at !== null || customer.organization_id !== entry.organizationId) {
      issues.push({
        loc: ['body', 'events', String(entry.index), 'customer_id'],
        msg: 'Customer not found.',
        type: 'value_error',
        input: entry.event.customer_id,
      });
    }
  }
  if (issues.length > 0) {
    issues.sort((a, b) => Number(a.loc[2]) - Number(b.loc[2]));
    throw new PolarRequestValidationError(issues.slice(0, MAX_ISSUES));
  }

  const mark = newId();
  const ingestedAt = deps.now().toISOString();
  const distinct = new Map<string, UsageEventRecord>();
  let duplicates = 0;
  for (const { event, organizationId, micros, customerId } of checked) {
    const externalId = event.external_id ?? null;
    const id = externalId === null ? newId() : usageEventId(organizationId, externalId);
    if (distinct.has(id)) {
      duplicates++;
      continue;
    }
    distinct.set(id, {
      id,
      organization_id: organizationId,
      name: event.name,
      timestamp_us: micros,
      external_id: externalId,
      customer_id: customerId,
      external_customer_id: event.external_customer_id ?? null,
      metadata: JSON.stringify(event.metadata ?? {}),
      ingest_request: mark,
      ingested_at: ingestedAt,
    });
  }
  const records = [...distinct.values()];
  const outcomes = await settleAll(records, PUTS_IN_FLIGHT, (record) => putUsageEvent(deps.table, record));
  let inserted = 0;
  const names = new Map<string, EventNameCounts>();
  outcomes.forEach((outcome, i) => {
    const record = records[i] as UsageEventRecord;
    if (outcome.status !== 'fulfilled') return;
    if (outcome.value === 'duplicate') {
      duplicates++;
      return;
    }
    inserted++;
    const key = `${record.organization_id}\u0000${record.name}`;
    const counts = names.get(key);
    if (!counts) {
      names.set(key, {
        organization_id: record.organization_id,
        name: record.name,
        occurrences: 1,
        first_seen_us: record.timestamp_us,
        last_seen_us: record.timestamp_us,
      });
    } else {
      counts.occurrences++;
      counts.first_seen_us = Math.min(counts.first_seen_us, record.timestamp_us);
      counts.last_seen_us = Math.max(counts.last_seen_us, record.timestamp_us);
    }
  });
  const shard = Number.parseInt(mark.slice(0, 2), 16) % EVENT_NAME_SHARDS;
  const counted = await settleAll([...names.values()], PUTS_IN_FLIGHT, (counts) =>
    countEventName(deps.table, shard, counts, mark),
  );
  const failed = [...outcomes, ...counted].find((outcome) => outcome.status === 'rejected');
  if (failed) {
    // Every call settled first. The events stored are duplicates of the client's retry; those whose
    // names were not counted stay missing from List Event Names' figures (docs/data-model.md).
    if (counted.some((outcome) => outcome.status === 'rejected')) {
      logError('ingest events: event names not counted', { names: names.size, inserted });
    }
    throw (failed as PromiseRejectedResult).reason;
  }
  return { inserted, duplicates };
}

// ---------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------

export function presentEvent(event: UsageEventRecord, customer: CustomerRecord | undefined): Event {
  return {
    id: event.id,
    timestamp: presentEventTime(event.timestamp_us),
    organization_id: event.organization_id,
    customer_id: event.customer_id,
    customer: customer ? presentCustomer(customer) : null,
    external_customer_id: event.external_customer_id,
    member_id: null,
    external_member_id: null,
    child_count: 0,
    parent_id: null,
    label: event.name,
    name: event.name,
    source: 'user',
    metadata: JSON.parse(event.metadata) as Event['metadata'],
  };
}

async function presentEvents(deps: Dependencies, events: readonly UsageEventRecord[]): Promise<Event[]> {
  const ids = events.flatMap((event) => (event.customer_id ? [event.customer_id] : []));
  const customers = ids.length > 0 ? await readCustomers(deps.table, ids) : new Map<string, CustomerRecord>();
  return events.map((event) =>
    presentEvent(event, event.customer_id ? customers.get(event.customer_id) : undefined),
  );
}

/** An event of one of the caller's organizations; anything else is the same 404. */
export async function getEvent(deps: Dependencies, principal: UserPrincipal, id: string): Promise<Event> {
  const event = await getUsageEvent(deps.table, normalizeId(id));
  if (!event || !principal.organizationIds.includes(event.organization_id)) throw new ResourceNotFound();
  const [shown] = await presentEvents(deps, [event]);
  return shown as Event;
}

const organizationsOf = (principal: UserPrincipal, requested: readonly string[] | undefined): string[] => {
  const wanted = requested?.map(normalizeId);
  return wanted ? principal.organizationIds.filter((id) => wanted.includes(id)) : principal.organizationIds;
};

/** The hosted service's filters that no key of the event list answers. */
const UNSUPPORTED_EVENT_FILTERS = {
  filter: 'Filtering events by a meter filter is not supported.',
  meter_id: 'Filtering events by meter is not supported.',
  query: 'Searching events is not supported.',
  parent_id: 'Events have no parents here.',
  depth: 'Events have no parents here.',
  metadata: 'Filtering events by metadata is not supported.',
} as const;

/** Filters answered only within a time window (read in full), never over a whole list. */
const WINDOW_FILTERS = ['customer_id', 'external_customer_id', 'name'] as const;

type Order = (a: UsageEventRecord, b: UsageEventRecord) => number;
const eventOrder =
  (descending: boolean): Order =>
  (a, b) =>
    a.timestamp_us !== b.timestamp_us
      ? descending
        ? b.timestamp_us - a.timestamp_us
        : a.timestamp_us - b.timestamp_us
      : a.id < b.id
        ? -1
        : a.id > b.id
          ? 1
          : 0;

/**
 * A page of events. Without a time window: the newest (or oldest) `page × limit` ≤ 1000 events,
 * merged from the list's 16 shards per organization, each read in chunks only as far as the page
 * needs; `total_count` from the name counts. With a window: every event of it read (within the
 * list read bound), filtered, ordered and cut in memory, `total_count` exact.
 */
export async function listEvents(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListEventsQuery,
): Promise<ListResourceEvent> {
  refuseUnsupported(query, UNSUPPORTED_EVENT_FILTERS);
  const window = pageWindow(query);
  const windowed = query.start_timestamp !== undefined || query.end_timestamp !== undefined;
  if (!windowed) {
    const needsWindow = WINDOW_FILTERS.filter((name) => query[name] !== undefined);
    if (needsWindow.length > 0) {
      throw new PolarRequestValidationError(
        needsWindow.map((name) => ({
          loc: ['query', name],
          msg: `${name} filters the events of a time window: give start_timestamp or end_timestamp.`,
          type: 'value_error',
          input: query[name],
        })),
      );
    }
    if (window.offset + window.limit > EVENT_PAGE_DEPTH) {
      throw new PolarRequestValidationError([
        {
          loc: ['query', 'page'],
          msg: `Without a time window only the first ${EVENT_PAGE_DEPTH} events of the order can be paged (page × limit ≤ ${EVENT_PAGE_DEPTH}): give start_timestamp or end_timestamp, or reverse the sorting.`,
          type: 'value_error',
          input: query.page,
        },
      ]);
    }
  }
  const descending = (query.sorting?.[0] ?? '-timestamp') === '-timestamp';
  const organizations = organizationsOf(principal, query.organization_id);
  const empty = { items: [], pagination: pagination(0, window) };
  if (query.source && !query.source.includes('user')) return empty;
  const budget = new ReadBudget();
  const order = eventOrder(descending);
  let page: UsageEventRecord[];
  let total: number;
  if (windowed) {
    const from = query.start_timestamp !== undefined ? parseEventTime(query.start_timestamp) : 0;
    const to = query.end_timestamp !== undefined ? parseEventTime(query.end_timestamp) : nowMicros(deps);
    for (const [name, parsed] of [
      ['start_timestamp', from],
      ['end_timestamp', to],
    ] as const) {
      if (typeof parsed !== 'number') {
        throw new PolarRequestValidationError([
          { loc: ['query', name], msg: parsed.invalid, type: 'value_error', input: query[name] },
        ]);
      }
    }
    if ((from as number) > (to as number)) return empty;
    const all = await readWindow(deps, organizations, { from: from as number, to: to as number }, budget);
    const customerIds = query.customer_id?.map(normalizeId);
    const matching = all.filter(
      (event) =>
        (!customerIds || (event.customer_id !== null && customerIds.includes(event.customer_id))) &&
        (!query.external_customer_id ||
          (event.external_customer_id !== null &&
            query.external_customer_id.includes(event.external_customer_id))) &&
        (!query.name || query.name.includes(event.name)),
    );
    matching.sort(order);
    total = matching.length;
    page = matching.slice(window.offset, window.offset + window.limit);
  } else {
    const names = (
      await Promise.all(organizations.map((id) => readEventNames(deps.table, id, budget)))
    ).flat();
    total = names.reduce((sum, counts) => sum + counts.occurrences, 0);
    const needed = window.offset + window.limit;
    const merged = total === 0 ? [] : await readNewest(deps, organizations, needed, descending, budget);
    page = merged.slice(window.offset, needed);
  }
  return withinAnswerLimit({ items: await presentEvents(deps, page), pagination: pagination(total, window) });
}

/** Every event of the organizations within [from, to], or a 422 when more than one request may read. */
async function readWindow(
  deps: Dependencies,
  organizations: readonly string[],
  range: { from: number; to: number },
  budget: ReadBudget,
): Promise<UsageEventRecord[]> {
  try {
    // One shard after another: a request makes one call at a time (its first failure ends it).
    const read: UsageEventRecord[] = [];
    for (const organizationId of organizations) {
      for (let shard = 0; shard < EVENT_LIST_SHARDS; shard++) {
        let start: Record<string, unknown> | undefined;
        do {
          const chunk = await readEventRange(
            deps.table,
            organizationId,
            shard,
            range,
            false,
            1000,
            budget,
            start,
          );
          read.push(...chunk.items);
          start = chunk.next;
        } while (start);
      }
    }
    return read;
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    throw new PolarRequestValidationError([
      {
        loc: ['query', 'start_timestamp'],
        msg: 'This time window holds more events than one request may read (500 read units): narrow it (start_timestamp, end_timestamp) or filter by organization_id.',
        type: 'value_error',
      },
    ]);
  }
}

/**
 * The first `needed` events of the order across the organizations' shards: each shard read in
 * chunks, and read on only while its last entry read could still be among the first `needed`.
 */
async function readNewest(
  deps: Dependencies,
  organizations: readonly string[],
  needed: number,
  descending: boolean,
  budget: ReadBudget,
): Promise<UsageEventRecord[]> {
  const order = eventOrder(descending);
  const range = { from: 0, to: Number.MAX_SAFE_INTEGER };
  const sources = organizations.flatMap((organizationId) =>
    Array.from({ length: EVENT_LIST_SHARDS }, (_, shard) => ({
      organizationId,
      shard,
      items: [] as UsageEventRecord[],
      more: true,
      next: undefined as Record<string, unknown> | undefined,
    })),
  );
  const chunk = Math.min(1000, Math.max(8, Math.ceil((needed * 1.5) / sources.length)));
  let pending = sources;
  for (;;) {
    // One shard after another: a request makes one call at a time (its first failure ends it).
    for (const source of pending) {
      const read = await readEventRange(
        deps.table,
        source.organizationId,
        source.shard,
        range,
        descending,
        chunk,
        budget,
        source.next,
      );
      source.items.push(...read.items);
      source.more = read.more;
      source.next = read.next;
    }
    const merged = sources.flatMap((source) => source.items).sort(order);
    const boundary = merged[needed - 1];
    pending = sources.filter((source) => {
      if (!source.more) return false;
      if (!boundary) return true;
      const last = source.items.at(-1);
      // Its next entries come after its last one: they matter only if that one is not past the boundary.
      return (
        !last ||
        (descending ? last.timestamp_us >= boundary.timestamp_us : last.timestamp_us <= boundary.timestamp_us)
      );
    });
    if (pending.length === 0) return merged.slice(0, needed);
  }
}

/** The hosted service's name filters that no key answers. */
const UNSUPPORTED_NAME_FILTERS = {
  customer_id: 'Filtering event names by customer is not supported.',
  external_customer_id: 'Filtering event names by customer is not supported.',
} as const;

type NameField = 'name' | 'occurrences' | 'first_seen' | 'last_seen';

/** The caller's organizations' event names with their counts, merged by name, sorted, one page. */
export async function listEventNames(
  deps: Dependencies,
  principal: UserPrincipal,
  query: ListEventNamesQuery,
): Promise<ListResourceEventName> {
  refuseUnsupported(query, UNSUPPORTED_NAME_FILTERS);
  const window = pageWindow(query);
  if (query.source && !query.source.includes('user')) return { items: [], pagination: pagination(0, window) };
  const budget = new ReadBudget();
  let read: EventNameCounts[];
  try {
    read = [];
    for (const id of organizationsOf(principal, query.organization_id))
      read.push(...(await readEventNames(deps.table, id, budget)));
  } catch (error) {
    if (!(error instanceof ListReadTooCostly)) throw error;
    throw new PolarRequestValidationError([
      {
        loc: ['query', 'organization_id'],
        msg: 'These organizations have more event names than one request may read (500 read units): name fewer organizations.',
        type: 'value_error',
      },
    ]);
  }
  const merged = new Map<string, EventNameCounts>();
  for (const counts of read) {
    const seen = merged.get(counts.name);
    if (!seen) merged.set(counts.name, { ...counts });
    else {
      seen.occurrences += counts.occurrences;
      seen.first_seen_us = Math.min(seen.first_seen_us, counts.first_seen_us);
      seen.last_seen_us = Math.max(seen.last_seen_us, counts.last_seen_us);
    }
  }
  const needle = query.query?.toLowerCase();
  const names = [...merged.values()].filter(
    (counts) => !needle || counts.name.toLowerCase().includes(needle),
  );
  const criteria = (query.sorting && query.sorting.length > 0 ? query.sorting : ['-last_seen']).map(
    (value) => ({
      field: (value.startsWith('-') ? value.slice(1) : value) as NameField,
      descending: value.startsWith('-'),
    }),
  );
  const nameValue = (counts: EventNameCounts, field: NameField): number | string =>
    field === 'name'
      ? counts.name
      : field === 'occurrences'
        ? counts.occurrences
        : field === 'first_seen'
          ? counts.first_seen_us
          : counts.last_seen_us;
  names.sort((a, b) => {
    for (const { field, descending } of criteria) {
      const x = nameValue(a, field);
      const y = nameValue(b, field);
      if (x !== y) return (x < y ? -1 : 1) * (descending ? -1 : 1);
    }
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  const items: EventName[] = names.slice(window.offset, window.offset + window.limit).map((counts) => ({
    name: counts.name,
    label: counts.name,
    source: 'user',
    occurrences: counts.occurrences,
    first_seen: presentEventTime(counts.first_seen_us),
    last_seen: presentEventTime(counts.last_seen_us),
  }));
  return { items, pagination: pagination(names.length, window) };
}

/**
 * What each operation served here may do (shared/data/grants.ts), keyed by its `operationId`:
 * the grants of the data functions it uses, and of authentication (shared/http/auth.ts).
 */
export const operationAccess = (): OperationAccess => ({
  ingestEvents: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...idempotencyAccess.idempotencyKey,
      ...usageEventsAccess.readCustomers,
      ...usageEventsAccess.putUsageEvent,
      ...usageEventsAccess.countEventName,
    ],
  },
  listEvents: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...usageEventsAccess.readEventNames,
      ...usageEventsAccess.readEventRange,
      ...usageEventsAccess.readCustomers,
    ],
  },
  getEvent: {
    table: [
      ...tokensAccess.findToken,
      ...tokensAccess.findAccessToken,
      ...usageEventsAccess.getUsageEvent,
      ...usageEventsAccess.readCustomers,
    ],
  },
  listEventNames: {
    table: [...tokensAccess.findToken, ...tokensAccess.findAccessToken, ...usageEventsAccess.readEventNames],
  },
});

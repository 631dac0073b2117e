/**
 * 1. Cold start per function. Each function is bundled exactly as the stack bundles it
 * (`bundlingOptions`, infra/function.ts), plus a baseline bundle that only constructs the
 * DynamoDB document client and makes one GetItem (the floor every function pays). Each run is a
 * fresh Node process (NODE_OPTIONS as on Lambda) that imports the bundle and invokes its handler
 * once against a loopback stub of DynamoDB; bundles are interleaved, run after run.
 */
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { BuildOptions } from 'esbuild';
import { functionNodeOptions } from '#infra/function.ts';
import { DAEMON_ADDRESS_ENV, TRACE_HEADER_ENV } from '#shared/observability/xray.ts';
import { operations } from '#shared/operations.ts';
import { type Bundle, bundle } from './bundle.ts';
import { FakeTable, type RecordedCall, startStubEndpoint } from './fake-table.ts';
import { fixtureItems } from './fixture.ts';
import { recordCalls } from './handlers.ts';
import { fmt, median, percentile, ratio, type SectionResult, verdict } from './report.ts';
import { operationCases } from './samples.ts';

const run = promisify(execFile);

export const COLD_RATIO_TARGET = 1.25;
export const SIZE_TARGET_BYTES = 350_000;

interface Sample {
  bootMs: number;
  importMs: number;
  invokeMs: number;
  status: number;
}

interface Subject {
  name: string;
  entry: string | { contents: string };
  overrides?: Partial<BuildOptions>;
  status: number;
  /** The request it is invoked with: its operation's (a twin's, its operation's); else any. */
  event?: () => unknown;
  eventFile: string;
  bundle?: Bundle;
  /** Environment added to the Lambda-like one (the traced runs' trace header). */
  env?: Record<string, string>;
  samples: Sample[];
}

/**
 * A sampled X-Ray trace header as Lambda sets it for a traced invocation, its root id naming the
 * subject so that the subsegments the daemon stand-in receives can be counted per subject.
 */
function sampledTraceHeader(subjectIndex: number): { header: string; traceId: string } {
  const traceId = `1-${Math.floor(Date.now() / 1000).toString(16)}-${subjectIndex.toString(16).padStart(24, '0')}`;
  return { header: `Root=${traceId};Parent=53995c3f42cd8ad8;Sampled=1`, traceId };
}

/** A stand-in for the X-Ray daemon on loopback: counts the subsegments received per trace id. */
async function startDaemon(): Promise<{ address: string; received: Map<string, number>; close(): void }> {
  const received = new Map<string, number>();
  const socket = createSocket('udp4');
  socket.on('message', (message) => {
    // One datagram: the daemon's header line, then the segment document.
    const document = JSON.parse(message.toString('utf8').split('\n')[1] ?? '{}') as { trace_id?: string };
    if (document.trace_id) received.set(document.trace_id, (received.get(document.trace_id) ?? 0) + 1);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${socket.address().port}`, received, close: () => socket.close() };
}

/** Schema compilation at init would need Ajv's compiler (ajv/dist/core, compile/*) or `new Function`. */
function compilationCheck(built: Bundle): {
  ajvCompiler: string[];
  newFunction: number;
  compileCalls: number;
} {
  const inputs = Object.keys(built.metafile.inputs);
  const ajvCompiler = inputs.filter(
    (path) => /node_modules\/ajv\//.test(path) && !/node_modules\/ajv\/dist\/runtime\//.test(path),
  );
  const text = readFileSync(built.file, 'utf8');
  return {
    ajvCompiler,
    newFunction: (text.match(/new Function\(/g) ?? []).length,
    compileCalls: (text.match(/\.compile\(|new Ajv\b/g) ?? []).length,
  };
}

/** The same DynamoDB calls as one request of the operation, made with the bare SDK: no code of ours. */
function twinSource(calls: RecordedCall[], status: number): string {
  const classes = [...new Set(calls.map((call) => call.command))];
  return [
    "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    `import { DynamoDBDocumentClient, ${classes.join(', ')} } from '@aws-sdk/lib-dynamodb';`,
    'const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ maxAttempts: 3 }), {',
    '  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },',
    '  unmarshallOptions: { wrapNumbers: false },',
    '});',
    `const commands = { ${classes.join(', ')} };`,
    `const calls = ${JSON.stringify(calls.map((call) => [call.command, call.input]))};`,
    'export const handler = async () => {',
    '  for (const [name, input] of calls) await doc.send(new commands[name](input));',
    `  return { statusCode: ${status} };`,
    '};',
  ].join('\n');
}

const CHILD = join(import.meta.dirname, 'cold-child.mjs');

export async function coldStart(options: { runs: number }): Promise<SectionResult> {
  const work = mkdtempSync(join(tmpdir(), 'commerce-bench-cold-'));
  const stub = await startStubEndpoint(new FakeTable(fixtureItems()));
  const daemon = await startDaemon();
  try {
    const baseline: Subject = {
      name: 'baseline: client + 1 GetItem',
      entry: 'test/bench/entries/baseline.ts',
      status: 200,
      eventFile: '',
      samples: [],
    };
    const pairs: { fn: Subject; twin: Subject; traced: Subject; traceId: string; calls: number }[] = [];
    // Functions whose first request calls a service the stub endpoint does not speak are measured
    // without, and named in the notes with what they call.
    const unmeasured = new Map<string, string>(
      operations.flatMap((op): [string, string][] => {
        if ('webhookKeySet' in op) return [[op.name, 'the webhook key set in Secrets Manager']];
        return [];
      }),
    );
    for (const c of operationCases.filter((x) => !unmeasured.has(x.name))) {
      const operation = operations.find((op) => op.name === c.name);
      if (!operation) throw new Error(`unknown operation ${c.name}`);
      const calls = await recordCalls(c.name);
      const fn: Subject = {
        name: c.name,
        entry: operation.entry,
        status: c.status,
        event: c.event,
        eventFile: '',
        samples: [],
      };
      const trace = sampledTraceHeader(pairs.length + 1);
      pairs.push({
        fn,
        // The same bundle in a sampled invocation of a function with active tracing: the trace
        // header Lambda sets and the daemon's address, so each DynamoDB call sends its subsegment.
        traced: {
          ...fn,
          name: `${c.name} traced`,
          env: { [TRACE_HEADER_ENV]: trace.header, [DAEMON_ADDRESS_ENV]: daemon.address },
          samples: [],
        },
        traceId: trace.traceId,
        calls: calls.length,
        twin: {
          name: `${c.name} SDK twin`,
          entry: { contents: twinSource(calls, c.status) },
          status: c.status,
          event: c.event,
          eventFile: '',
          samples: [],
        },
      });
    }
    // What-if: the floor as the stack bundled it before issue 5 (the SDK's whole default credential
    // chain, sources embedded in the source map), to show what the bundling changes bought.
    const previous: Subject = {
      name: 'baseline, pre-issue-5 bundling',
      entry: baseline.entry,
      overrides: { alias: {}, sourcesContent: true },
      status: 200,
      eventFile: '',
      samples: [],
    };
    const subjects = [baseline, previous, ...pairs.flatMap((pair) => [pair.fn, pair.twin, pair.traced])];
    const traced = new Map(pairs.map((pair) => [pair.traced, pair.fn]));
    for (const [i, subject] of subjects.entries()) {
      // A traced subject runs its function's own bundle (built just before it).
      const untraced = traced.get(subject);
      subject.bundle = untraced?.bundle ?? (await bundle(`b${i}`, subject.entry, work, subject.overrides));
      // By reference, not by name: `get-customer` is a prefix of `get-customer-external`.
      const event = subject.event ?? operationCases[2]?.event;
      subject.eventFile = join(work, `b${i}.event.json`);
      writeFileSync(subject.eventFile, JSON.stringify(event?.()));
    }

    const env = {
      PATH: process.env.PATH ?? '',
      NODE_OPTIONS: functionNodeOptions,
      TABLE_NAME: 'bench',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'AKIDBENCH',
      AWS_SECRET_ACCESS_KEY: 'bench-secret',
      AWS_SESSION_TOKEN: 'bench-session',
      AWS_LAMBDA_FUNCTION_NAME: 'bench',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      AWS_ENDPOINT_URL_DYNAMODB: stub.url,
      // The SDK warns once on Node < 22 (not on Lambda's nodejs22.x): keep that out of the figures.
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    const once = async (subject: Subject): Promise<Sample> => {
      const { stdout } = await run(
        process.execPath,
        [CHILD, subject.bundle?.file as string, subject.eventFile],
        {
          env: { ...env, ...subject.env },
          timeout: 30_000,
        },
      );
      const sample = JSON.parse(stdout.trim().split('\n').at(-1) as string) as Sample;
      if (sample.status !== subject.status) {
        throw new Error(
          `${subject.name}: first invocation answered ${sample.status}, expected ${subject.status}`,
        );
      }
      return sample;
    };
    // One discarded round so the page cache holds every bundle and the child script.
    for (const subject of subjects) await once(subject);
    for (let r = 0; r < options.runs; r++) {
      // Rotate the order each round so no bundle always runs right after another.
      for (let k = 0; k < subjects.length; k++) {
        const subject = subjects[(r + k) % subjects.length] as Subject;
        subject.samples.push(await once(subject));
      }
    }

    const init = (s: Subject) => median(s.samples.map((x) => x.importMs));
    const cold = (s: Subject) => median(s.samples.map((x) => x.importMs + x.invokeMs));
    const spread = (s: Subject) => {
      const totals = s.samples.map((x) => x.importMs + x.invokeMs);
      return `${fmt(Math.min(...totals), 0)}–${fmt(percentile(totals, 90), 0)}`;
    };
    const limit = COLD_RATIO_TARGET;
    const initRows = [baseline, previous, ...pairs.map((p) => p.fn)].map((s) => [
      s.name,
      fmt(median(s.samples.map((x) => x.bootMs)), 1),
      fmt(init(s), 1),
      ratio(init(s), init(baseline)),
      s === baseline || s === previous ? '—' : verdict(init(s) <= limit * init(baseline)),
    ]);
    const coldRows = [baseline, previous, ...pairs.flatMap((p) => [p.fn, p.twin])].map((s) => {
      const pair = pairs.find((p) => p.fn === s);
      return [
        s.name,
        fmt(median(s.samples.map((x) => x.invokeMs)), 1),
        `${fmt(cold(s), 1)} [${spread(s)}]`,
        ratio(cold(s), cold(baseline)),
        // Twins are references (the SDK alone), not subjects of the target.
        !pair ? '—' : verdict(cold(s) <= limit * cold(baseline)),
        pair ? ratio(cold(s), cold(pair.twin)) : '',
        pair ? verdict(cold(s) <= limit * cold(pair.twin)) : '',
      ];
    });
    // Each traced request's DynamoDB calls, one subsegment each (the recording run counted them).
    const tracedRows = pairs.map((pair) => {
      const requests = pair.traced.samples.length + 1; // the discarded warm-up round included
      const subsegments = (daemon.received.get(pair.traceId) ?? 0) / requests;
      return [
        pair.fn.name,
        fmt(init(pair.traced), 1),
        ratio(init(pair.traced), init(pair.fn)),
        ratio(init(pair.traced), init(baseline)),
        verdict(init(pair.traced) <= limit * init(baseline)),
        `${fmt(cold(pair.traced), 1)} [${spread(pair.traced)}]`,
        ratio(cold(pair.traced), cold(pair.fn)),
        `${fmt(subsegments, 1)} / ${pair.calls}`,
        verdict(subsegments === pair.calls),
      ];
    });
    const tracedCost = pairs.map((pair) => cold(pair.traced) - cold(pair.fn));
    const sizeRows = [baseline, previous, ...pairs.map((p) => p.fn)].map((subject) => {
      const built = subject.bundle as Bundle;
      const check = compilationCheck(built);
      const clean = check.ajvCompiler.length === 0 && check.newFunction === 0 && check.compileCalls === 0;
      return [
        subject.name,
        fmt(built.bytes / 1000, 1),
        ratio(built.bytes, baseline.bundle?.bytes as number),
        subject === previous ? '—' : verdict(built.bytes <= SIZE_TARGET_BYTES),
        `${check.ajvCompiler.length} / ${check.newFunction} / ${check.compileCalls}`,
        verdict(clean),
      ];
    });
    return {
      id: 'cold',
      title: '1. Cold start per function',
      method: [
        'Bundles built by esbuild from infra/function.ts `bundlingOptions`, with the flags NodejsFunction passes.',
        `${options.runs} fresh \`node\` processes per bundle (NODE_OPTIONS=${functionNodeOptions}, Lambda-like env), interleaved.`,
        'Each imports the bundle (= Lambda "Init Duration": module load + top-level init) and then invokes the handler',
        "once against a loopback DynamoDB stub (the first request pays the SDK's lazy work: credentials, endpoint,",
        'serializers, signing, connection). Medians in ms, [min–p90]. "SDK twin": a bundle making the same DynamoDB',
        'calls (recorded from the real handler) with the bare document client and nothing of ours.',
        `Node ${process.version} here; the functions run nodejs22.x arm64 (absolute times differ, ratios carry).`,
      ],
      tables: [
        {
          title: 'Init (import only)',
          note: `target: median ≤ ${limit}× baseline`,
          columns: ['bundle', 'node boot', 'init', 'vs baseline', 'verdict'],
          rows: initRows,
        },
        {
          title: 'Init + first invocation (cold request)',
          note: `same target, also against the operation's SDK twin`,
          columns: [
            'bundle',
            'first invoke',
            'init+invoke [min–p90]',
            'vs baseline',
            'verdict',
            'vs twin',
            'verdict',
          ],
          rows: coldRows,
        },
        {
          title: 'Traced: the same bundle in a sampled invocation (X-Ray active tracing)',
          note: `init target as above; trace header and daemon address as Lambda sets them, a UDP daemon stand-in on loopback`,
          columns: [
            'bundle',
            'init',
            'vs untraced',
            'vs baseline',
            'verdict',
            'init+invoke [min–p90]',
            'vs untraced',
            'subsegments / DynamoDB calls per request',
            'verdict',
          ],
          rows: tracedRows,
        },
        {
          title: 'Bundle size and schema compilation at init',
          note: 'kB = 1000 B, minified, AWS SDK bundled; target ≤ 350 kB. Compilation: Ajv compiler modules / `new Function(` / `.compile(`,`new Ajv` in the bundle, all 0',
          columns: ['bundle', 'kB', 'vs baseline', 'verdict', 'compiler / new Function / compile', 'verdict'],
          rows: sizeRows,
        },
      ],
      notes: [
        `Init is what the ${limit}× target is held to: Lambda's Init Duration. The cold request adds the first invocation, where the SDK's lazy first-use work for each distinct command dominates: the SDK twins alone cost ${pairs.map((p) => ratio(cold(p.twin), cold(baseline))).join(' / ')} of the floor; "vs twin" is what our code adds on top.`,
        `The pre-issue-5 floor (${fmt((previous.bundle?.bytes ?? 0) / 1000, 1)} kB) inits in ${ratio(init(previous), init(baseline))} the time of today's: the bundles now carry only the environment-variable step of the SDK's credential chain (infra/env-credentials.ts: −135 kB) and no sources in their maps (Node parses the map at every cold start with --enable-source-maps).`,
        'Of what remains ours at init, @middy/core imports node:stream/web, node:stream/promises and node:timers eagerly (~3 ms here); each bundle now holds only its own validator, and the `uri` format without the rest of ajv-formats.',
        "Create Client's first invocation also compiles ajv-formats' full RFC 3986 `uri` regular expression (~3 ms here).",
        `Tracing adds nothing at init (node:dgram and the socket are loaded on the first traced DynamoDB call) and ${fmt(median(tracedCost), 1)} ms median to a sampled cold request (range ${fmt(Math.min(...tracedCost), 1)} to ${fmt(Math.max(...tracedCost), 1)} ms over the functions, run-to-run noise included); the last column checks that each traced request sent one subsegment per DynamoDB call. Lambda's own share of active tracing (its segment, the daemon) is outside any bundle and not measured here.`,
        `Not measured here (the first request calls what the stub does not answer): ${[...unmeasured].map(([name, what]) => `${name} (${what})`).join(', ')}.`,
      ],
    };
  } finally {
    daemon.close();
    await stub.close();
    rmSync(work, { recursive: true, force: true });
  }
}

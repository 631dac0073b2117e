/**
 * `npm run lint:cfn`: cfn-lint over the template of each kind of stage, prod (alarms, retained data)
 * and a preview (every other stage name), each synthesised by the cdk CLI into a temporary directory.
 * W3005 (a DependsOn that a Ref or GetAtt already implies) is how CDK writes every function's
 * dependency on its role's policy: ignored. Any other finding fails.
 *
 * The template is environment-agnostic, so it is linted against every region cfn-lint knows
 * (`ALL_REGIONS`, which includes us-east-1, cfn-lint's default region). The one finding that is no
 * defect of the template is E3006, a resource type that does not exist in some region: those regions
 * are listed (the stack cannot be deployed there). E3006 in us-east-1 and anything else fails.
 *
 * What makes it cheap (it took 210-307 s in CI):
 * - The templates come from `cdk list --output <dir>`, not `cdk synth`: the CLI runs the same app
 *   with the same context (cdk.json, `-c`, its path and asset metadata) and the app writes the same
 *   cloud assembly, cdk-nag and CDK's validation included, but `list` is no bundling command, so no
 *   function is bundled again (`npm run synth` and the infra tests bundle prod; a bundle changes no
 *   property cfn-lint reads, only the assets' hashes in `S3Key`). Both stages synthesise at once.
 * - One cfn-lint run per template over every region, all at once, instead of a run in us-east-1 and
 *   a second over every region (the first was contained in the second).
 * - The preview in us-east-1 only, when it declares no resource type and no property that prod does
 *   not (it is prod minus the alarms, the front door and retention): what differs between regions is
 *   which types and properties exist, and prod's every-region run has judged each of them. A preview
 *   that declares something more is linted in every region again.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PRODUCTION_STAGE } from '../infra/stack.ts';
import { cdk } from './deploy/cdk-cli.ts';

const run = promisify(execFile);

/** One stage of each kind: their templates differ (retention, PITR, alarms). */
const STAGES = [PRODUCTION_STAGE, 'lint-preview'];
const IGNORED = ['W3005'];
const REGION_AVAILABILITY = 'E3006';
/** cfn-lint's default region: a resource type missing there is a defect, as for any other finding. */
const DEFAULT_REGION = 'us-east-1';

interface Finding {
  Filename: string;
  Level: string;
  Message: string;
  Rule: { Id: string };
  Location: { Start: { LineNumber: number }; Path: (string | number)[] };
}

/** cfn-lint's findings as JSON; its exit code only says which levels were found. */
export async function cfnLint(files: string[], regions: string[] = []): Promise<Finding[]> {
  const args = ['--format', 'json', '--ignore-checks', ...IGNORED];
  if (regions.length > 0) args.push('--regions', ...regions);
  try {
    const { stdout } = await run('cfn-lint', [...args, '--', ...files], { maxBuffer: 64 * 1024 * 1024 });
    return JSON.parse(stdout || '[]');
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: number | string; stdout?: string; stderr?: string };
    if (code === 'ENOENT') throw new Error('cfn-lint not found on PATH (pip install cfn-lint)');
    // 2, 4, 8: errors, warnings, informational findings (or-ed); 1 is cfn-lint failing itself.
    if (typeof code === 'number' && code > 1 && code < 16 && stdout) return JSON.parse(stdout);
    throw new Error(`cfn-lint failed (${code}): ${stderr ?? ''}${stdout ?? ''}`);
  }
}

const describe = (f: Finding, base: string) =>
  `  ${f.Rule.Id} ${relative(base, f.Filename)}:${f.Location.Start.LineNumber} ${f.Location.Path.join('/')}\n      ${f.Message}`;

/** The stack's template and its nested ones (prod's monitoring stack), synthesised without bundling. */
async function synthesise(stage: string, work: string): Promise<string[]> {
  const stack = `CommerceApi-${stage}`;
  const out = join(work, stage);
  const listed = await cdk(
    [
      'list',
      '-c',
      `stage=${stage}`,
      // Prod with its front door (CloudFront + WAF), as deployed: an example origin domain.
      ...(stage === PRODUCTION_STAGE
        ? [
            '-c',
            'apiOriginDomain=origin.api.example.com',
            '-c',
            'apiOriginCertificateArn=arn:aws:acm:eu-west-3:123456789012:certificate/00000000-0000-4000-8000-000000000000',
          ]
        : []),
      '--output',
      out,
    ],
    process.env,
  );
  if (!listed.output.split('\n').some((line) => line.trim() === stack))
    throw Object.assign(new Error(`cdk list did not name ${stack}`), { run: listed });
  console.log(`Synthesised ${stack} (${listed.seconds.toFixed(0)} s, unbundled)`);
  return [
    join(out, `${stack}.template.json`),
    ...readdirSync(out)
      .filter((file) => file.endsWith('.nested.template.json'))
      .map((file) => join(out, file)),
  ];
}

/**
 * Each resource type of the templates with the properties (top level) their resources set: what a
 * region's schema judges (whether the type exists there, which properties it has).
 */
export function shapes(files: string[]): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const file of files) {
    const template = JSON.parse(readFileSync(file, 'utf8')) as {
      Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
    };
    for (const { Type, Properties } of Object.values(template.Resources ?? {})) {
      const properties = found.get(Type) ?? new Set<string>();
      for (const name of Object.keys(Properties ?? {})) properties.add(name);
      found.set(Type, properties);
    }
  }
  return found;
}

/** What `other` declares that `base` does not: `Type` or `Type.Property`. */
export function notDeclaredIn(base: Map<string, Set<string>>, other: Map<string, Set<string>>): string[] {
  const missing: string[] = [];
  for (const [type, properties] of other) {
    const known = base.get(type);
    if (!known) missing.push(type);
    else for (const name of properties) if (!known.has(name)) missing.push(`${type}.${name}`);
  }
  return missing.sort();
}

/**
 * Every region cfn-lint knows, from cfn-lint itself: a template of one resource type that exists
 * nowhere, linted in `ALL_REGIONS`, is refused in each of them (E3006 names the region).
 */
async function knownRegions(work: string): Promise<string[]> {
  const probe = join(work, 'regions.template.json');
  writeFileSync(probe, JSON.stringify({ Resources: { Probe: { Type: 'AWS::CommerceApi::NoSuchType' } } }));
  const regions = (await cfnLint([probe], ['ALL_REGIONS'])).flatMap(
    (finding) => /^Resource type '.+' does not exist in '(.+)'$/.exec(finding.Message)?.slice(1) ?? [],
  );
  if (!regions.includes(DEFAULT_REGION)) throw new Error(`cfn-lint named no region like ${DEFAULT_REGION}`);
  return [...new Set(regions)].sort();
}

/** The regions in `n` groups of about the same size, every region in exactly one. */
export function splitRegions(regions: readonly string[], n: number): string[][] {
  const count = Math.min(n, regions.length);
  return Array.from({ length: count }, (_, k) => regions.filter((_, i) => i % count === k));
}

async function main(): Promise<number> {
  const { stdout: version } = await run('cfn-lint', ['--version']).catch(() => {
    throw new Error('cfn-lint not found on PATH (pip install cfn-lint)');
  });
  const work = mkdtempSync(join(tmpdir(), 'commerce-cfn-lint-'));
  try {
    const [[prod, preview], regions] = await Promise.all([
      Promise.all(STAGES.map((stage) => synthesise(stage, work))),
      knownRegions(work),
    ]);
    const templates = [...(prod ?? []), ...(preview ?? [])];
    // The preview is linted in every region only when it declares a property of a resource type that
    // prod does not: otherwise prod's every-region run has judged each of them region by region.
    const uncovered = notDeclaredIn(shapes(prod ?? []), shapes(preview ?? []));
    const everyRegion = (template: string) => (prod ?? []).includes(template) || uncovered.length > 0;
    // A template linted in every region is linted in halves of the regions at once: one cfn-lint run
    // is one thread, and prod's template over every region was the step's whole wall time.
    const halves = splitRegions(regions, 2);
    const runs = templates.flatMap((template) =>
      (everyRegion(template) ? halves : [[DEFAULT_REGION]]).map((group) => ({ template, group })),
    );

    console.log(`\n${version.trim()}, ignoring ${IGNORED.join(', ')} (CDK's redundant DependsOn)`);
    console.log(
      uncovered.length === 0
        ? `  the preview declares no resource type or property that prod does not: linted in ${DEFAULT_REGION}`
        : `  the preview declares what prod does not (${uncovered.slice(0, 5).join(', ')}): linted in every region`,
    );
    const started = performance.now();
    const everywhere = (
      await Promise.all(runs.map(({ template, group }) => cfnLint([template], group)))
    ).flat();
    const unavailable = new Map<string, Set<string>>();
    const other: Finding[] = [];
    for (const finding of everywhere) {
      const match = /^Resource type '(.+)' does not exist in '(.+)'$/.exec(finding.Message);
      if (finding.Rule.Id === REGION_AVAILABILITY && match && match[2] !== DEFAULT_REGION) {
        const [, type, region] = match as unknown as [string, string, string];
        unavailable.set(region, (unavailable.get(region) ?? new Set()).add(type));
      } else {
        other.push(finding);
      }
    }
    for (const finding of other) console.log(describe(finding, work));
    console.log(
      `  ${templates.length} templates (${templates.filter(everyRegion).length} in every region of ${regions.length}, ${DEFAULT_REGION} included; ${runs.length} cfn-lint runs at once), ` +
        `${((performance.now() - started) / 1000).toFixed(0)} s: ` +
        `${other.length} finding(s) besides resource types missing in a region`,
    );
    for (const [region, types] of [...unavailable].sort(([a], [b]) => a.localeCompare(b))) {
      console.log(`  not deployable in ${region}: no ${[...types].sort().join(', ')}`);
    }

    console.log(other.length === 0 ? '\ncfn-lint: clean' : `\ncfn-lint: ${other.length} finding(s)`);
    return other.length === 0 ? 0 : 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (error: Error & { run?: { output: string } }) => {
      if (error.run) console.error(error.run.output);
      console.error(error.message);
      process.exit(1);
    },
  );
}

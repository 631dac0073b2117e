/**
 * Builds a function exactly as the stack does: `bundlingOptions` from infra/function.ts,
 * translated to esbuild's API the way aws-cdk-lib's NodejsFunction translates it to esbuild's
 * command line (`--bundle --platform=node --target --format --outfile=index.mjs --minify
 * --sourcemap --banner:js --main-fields`, no `--external` when the SDK is bundled).
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type BuildOptions, build, type Metafile } from 'esbuild';
import { bundlingOptions } from '#infra/function.ts';

export const ROOT = join(import.meta.dirname, '../..');

/** `esbuildArgs` as NodejsFunction passes them (`--alias:a=b`); anything else must be taught here. */
function extraArgs(args: Record<string, string | boolean> | undefined): Pick<BuildOptions, 'alias'> {
  const alias: Record<string, string> = {};
  for (const [key, value] of Object.entries(args ?? {})) {
    if (key !== '--alias' || typeof value !== 'string') {
      throw new Error(
        `bench/bundle.ts does not translate esbuildArgs ${key}: teach it, so bundles match the stack`,
      );
    }
    const [from, to] = value.split('=') as [string, string];
    alias[from] = to;
  }
  return Object.keys(alias).length > 0 ? { alias } : {};
}

const KNOWN = new Set([
  'minify',
  'sourceMap',
  'sourcesContent',
  'format',
  'target',
  'mainFields',
  'banner',
  'bundleAwsSDK',
  'esbuildArgs',
  'forceDockerBundling',
]);

/** esbuild options equivalent to NodejsFunction's command line for `bundlingOptions`. */
export function esbuildOptions(entry: string, outdir: string): BuildOptions {
  const b = bundlingOptions;
  const unknown = Object.keys(b).filter((key) => !KNOWN.has(key));
  if (unknown.length > 0) {
    throw new Error(`bench/bundle.ts does not translate bundling option(s) ${unknown.join(', ')}: teach it`);
  }
  // NodejsFunction's default externals are the AWS SDK (`@aws-sdk/*`) unless it is bundled.
  const external = b.bundleAwsSDK ? [] : ['@aws-sdk/*'];
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: b.target,
    format: b.format,
    outfile: join(outdir, b.format === 'esm' ? 'index.mjs' : 'index.js'),
    minify: b.minify,
    sourcemap: b.sourceMap,
    sourcesContent: b.sourcesContent,
    ...extraArgs(b.esbuildArgs),
    external,
    banner: { js: b.banner },
    mainFields: [...b.mainFields],
    absWorkingDir: ROOT,
    logLevel: 'error',
  };
}

export interface Bundle {
  name: string;
  file: string;
  bytes: number;
  metafile: Metafile;
}

/** Bundles a file of the repository, or source text resolved from the repository root. */
export async function bundle(
  name: string,
  entry: string | { contents: string },
  outRoot: string,
  /** Departures from the stack's options, for what-if comparisons only. */
  overrides: Partial<BuildOptions> = {},
): Promise<Bundle> {
  const outdir = join(outRoot, name);
  mkdirSync(outdir, { recursive: true });
  const options = { ...esbuildOptions(typeof entry === 'string' ? entry : 'stdin.ts', outdir), ...overrides };
  if (typeof entry !== 'string') {
    delete options.entryPoints;
    options.stdin = { contents: entry.contents, resolveDir: ROOT, sourcefile: `${name}.ts`, loader: 'ts' };
  }
  const result = await build({ ...options, metafile: true });
  const file = options.outfile as string;
  return { name, file, bytes: statSync(file).size, metafile: result.metafile };
}

/** Input bytes per package (node_modules/<pkg> or the repository folder), largest first. */
export function composition(metafile: Metafile, output: string): [string, number][] {
  const out = Object.entries(metafile.outputs).find(([path]) => path.endsWith(output))?.[1];
  const sizes = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(out?.inputs ?? {})) {
    const match = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
    const key = match ? (match[1] as string) : (path.split('/').slice(0, 2).join('/') as string);
    sizes.set(key, (sizes.get(key) ?? 0) + bytesInOutput);
  }
  return [...sizes.entries()].sort((a, b) => b[1] - a[1]);
}

export const readText = (file: string) => readFileSync(file, 'utf8');

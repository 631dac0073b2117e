/**
 * Link check of the repository's documentation (README.md and docs/): every link must stay inside
 * the repository, except links to public standards and to AWS's documentation. A relative link
 * must name a file that exists (inside the checkout: `../` out of it is leaving the repository),
 * and an anchor must name a heading of the page it points at.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** Hosts a document may link to: standards bodies, and AWS's documentation. */
export const ALLOWED_HOSTS: readonly string[] = [
  'www.rfc-editor.org',
  'datatracker.ietf.org',
  'www.ietf.org',
  'www.w3.org',
  'www.unicode.org',
  'tc39.es',
  'spec.openapis.org',
  'json-schema.org',
  'www.standardwebhooks.com',
  'docs.aws.amazon.com',
];
/** The local API `npm start` serves: a link to it stays on the reader's machine. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export interface Link {
  file: string;
  line: number;
  target: string;
}

export interface LinkProblem extends Link {
  problem: string;
}

/** The text of a Markdown document with fenced code blocks and code spans blanked (line numbers kept). */
export function proseOf(markdown: string, spans: 'blank' | 'keep' = 'blank'): string {
  const lines = markdown.split('\n');
  let fence: string | null = null;
  return lines
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence !== null) {
        if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = null;
        return '';
      }
      if (marker) {
        fence = marker;
        return '';
      }
      return spans === 'keep' ? line : line.replace(/(`+)[^`]*?\1/g, '');
    })
    .join('\n');
}

/** Every link of a Markdown document: inline `[..](..)`, images, autolinks `<..>`, definitions, bare URLs, and `../` paths in code. */
export function linksOf(file: string, markdown: string): Link[] {
  const links: Link[] = [];
  // A path written as code (`../shared/spec/x.md`) sends the reader there as surely as a link.
  markdown.split('\n').forEach((text, index) => {
    for (const match of text.matchAll(/`(\.\.\/[^`\s]*)`/g))
      links.push({ file, line: index + 1, target: match[1] ?? '' });
  });
  proseOf(markdown)
    .split('\n')
    .forEach((text, index) => {
      const line = index + 1;
      const seen = new Set<string>();
      const add = (target: string) => {
        seen.add(target);
        links.push({ file, line, target });
      };
      for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) add(match[1] ?? '');
      for (const match of text.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]+)>/gi)) add(match[1] ?? '');
      for (const match of text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) add(match[1] ?? '');
      for (const match of text.matchAll(/\b(?:https?|ftp):\/\/[^\s)<>\]"']+/gi)) {
        const url = match[0].replace(/[.,;:!?]+$/, '');
        if (![...seen].some((target) => target.startsWith(url))) add(url);
      }
    });
  return links;
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens. */
export function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  for (const line of proseOf(markdown, 'keep').split('\n')) {
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line)?.[1];
    if (!heading) continue;
    const slug = slugOf(heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const count = counts.get(slug) ?? 0;
    counts.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with one link, or null. `root` is the repository's root. */
export function checkLink(
  root: string,
  link: Link,
  read = (path: string) => readFileSync(path, 'utf8'),
): string | null {
  const { target } = link;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(target)?.[1]?.toLowerCase();
  if (scheme) {
    if (scheme !== 'https' && scheme !== 'http') return `a ${scheme}: link leaves the repository`;
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return 'not a URL';
    }
    if (LOOPBACK_HOSTS.has(url.hostname)) return null;
    if (url.protocol === 'https:' && ALLOWED_HOSTS.includes(url.hostname)) return null;
    return `leaves the repository for ${url.host} (allowed: standards and AWS documentation)`;
  }
  if (target.startsWith('//')) return 'a protocol-relative link leaves the repository';
  const [path = '', anchor] = target.split('#', 2) as [string, string | undefined];
  const from = dirname(join(root, link.file));
  const file = path === '' ? join(root, link.file) : resolve(from, decodeURIComponent(path));
  const inside = relative(root, file);
  if (inside.startsWith(`..${sep}`) || inside === '..') return 'points outside the repository';
  if (!existsSync(file)) return `no such file: ${inside}`;
  if (anchor !== undefined && anchor !== '') {
    if (statSync(file).isDirectory() || !file.endsWith('.md'))
      return `an anchor into ${inside}, which is no Markdown page`;
    if (!anchorsOf(read(file)).has(anchor)) return `no heading #${anchor} in ${inside}`;
  }
  return null;
}

/** README.md and every Markdown file under docs/. */
export function documentationFiles(root: string): string[] {
  const files = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return files;
}

export function checkDocumentation(root: string): { links: Link[]; problems: LinkProblem[] } {
  const links = documentationFiles(root).flatMap((file) =>
    linksOf(file, readFileSync(join(root, file), 'utf8')),
  );
  const problems = links.flatMap((link) => {
    const problem = checkLink(root, link);
    return problem ? [{ ...link, problem }] : [];
  });
  return { links, problems };
}

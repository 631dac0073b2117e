import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  anchorsOf,
  checkDocumentation,
  checkLink,
  documentationFiles,
  linksOf,
} from '#test/support/doc-links.ts';

const root = process.cwd();

describe('README and docs/ link only inside the repository', () => {
  it('every link resolves inside the checkout, or goes to a standard or to AWS documentation', () => {
    const { links, problems } = checkDocumentation(root);
    expect(documentationFiles(root)).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/README.md',
        'docs/api.md',
        'docs/conventions.md',
        'docs/local.md',
        'docs/operations.md',
        'docs/oauth.md',
        'docs/webhooks.md',
        'docs/data-model.md',
        'docs/testing.md',
      ]),
    );
    // The README links into docs/ and to the OpenAPI document: the check reads real links.
    expect(
      links.filter((link) => link.file === 'README.md' && link.target.startsWith('docs/')).length,
    ).toBeGreaterThan(2);
    expect(
      problems.map(({ file, line, target, problem }) => `${file}:${line} ${target}: ${problem}`),
    ).toEqual([]);
  });
});

describe('the README', () => {
  it('stays a map: at most 12,000 bytes, its first code block the two commands, every topic a link into docs/', () => {
    const readme = readFileSync(join(root, 'README.md'));
    expect(readme.byteLength).toBeLessThanOrEqual(12_000);
    const text = readme.toString('utf8');
    const firstBlock = text.split('```')[1] ?? '';
    expect(firstBlock).toMatch(/^bash\nnpm ci && npm start +#/);
    expect(firstBlock).toMatch(/\nnpm test +#/);
    // Every page of docs/ is reachable from the README (docs/README.md and the images aside).
    const linked = new Set(linksOf('README.md', text).map((link) => link.target.split('#')[0]));
    const pages = documentationFiles(root).filter(
      (file) => file.startsWith('docs/') && file !== 'docs/README.md',
    );
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });
});

describe('the link checker', () => {
  const fixture = () => {
    const dir = mkdtempSync(join(tmpdir(), 'doc-links-'));
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'page.md'), '# A page\n\n## Two words: here\n\n## Two words: here\n');
    writeFileSync(join(dir, 'README.md'), '# Top\n');
    return dir;
  };
  const problem = (dir: string, target: string) => checkLink(dir, { file: 'README.md', line: 1, target });

  it('accepts files and headings that exist, standards, AWS docs and the local API', () => {
    const dir = fixture();
    for (const target of [
      'docs/page.md',
      'docs/page.md#a-page',
      'docs/page.md#two-words-here-1',
      '#top',
      'docs/',
      'https://www.rfc-editor.org/rfc/rfc7591',
      'https://docs.aws.amazon.com/lambda/latest/dg/welcome.html',
      'http://127.0.0.1:3000/docs',
    ]) {
      expect(problem(dir, target), target).toBeNull();
    }
  });

  it('refuses what leaves the repository or points at nothing', () => {
    const dir = fixture();
    expect(problem(dir, '../shared/spec/commerce-api-spec.md')).toBe('points outside the repository');
    expect(problem(dir, 'docs/missing.md')).toMatch(/^no such file/);
    expect(problem(dir, 'docs/page.md#nowhere')).toMatch(/^no heading #nowhere/);
    expect(problem(dir, 'https://github.com/polarsource/polar')).toMatch(
      /leaves the repository for github.com/,
    );
    expect(problem(dir, 'http://docs.aws.amazon.com/x')).toMatch(/leaves the repository/);
    expect(problem(dir, 'https://docs.aws.amazon.com.evil.example/')).toMatch(/leaves the repository/);
    expect(problem(dir, 'mailto:ops@example.com')).toMatch(/mailto: link/);
    expect(problem(dir, '//cdn.example/x.js')).toMatch(/protocol-relative/);
  });

  it('finds inline links, images, autolinks, definitions, bare URLs and ../ paths in code; not code blocks', () => {
    const markdown = [
      'See [the API](docs/api.md) and ![shot](docs/images/a.png "title").',
      'An autolink <https://example.com/a> and a bare https://example.org/b.',
      '[ref]: https://example.net/c',
      'The old spec was `../shared/spec/x.md`; `inline https://example.com/code` is code.',
      '```bash',
      'curl https://example.com/in-a-block',
      '```',
    ].join('\n');
    expect(linksOf('README.md', markdown).map((link) => [link.line, link.target])).toEqual([
      [4, '../shared/spec/x.md'],
      [1, 'docs/api.md'],
      [1, 'docs/images/a.png'],
      [2, 'https://example.com/a'],
      [2, 'https://example.org/b'],
      [3, 'https://example.net/c'],
    ]);
  });

  it('numbers repeated headings as GitHub does', () => {
    expect([
      ...anchorsOf('# Limits\n## Limits\n### `npm start`: what runs\n```\n# not a heading\n```\n'),
    ]).toEqual(['limits', 'limits-1', 'npm-start-what-runs']);
  });
});

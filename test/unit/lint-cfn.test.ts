/**
 * `npm run lint:cfn` lints the preview template in cfn-lint's default region only when prod, linted
 * in every region, declares each of its resource types and properties (scripts/lint-cfn.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { notDeclaredIn, shapes, splitRegions } from '#scripts/lint-cfn.ts';

const work = mkdtempSync(join(tmpdir(), 'lint-cfn-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let written = 0;
const template = (resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>) => {
  const file = join(work, `t${written++}.template.json`);
  writeFileSync(file, JSON.stringify({ Resources: resources }));
  return file;
};

describe('the preview judged against prod', () => {
  const prod = shapes([
    template({
      Table: {
        Type: 'AWS::DynamoDB::Table',
        Properties: { BillingMode: 'PAY_PER_REQUEST', TableClass: 'STANDARD' },
      },
      Fn: { Type: 'AWS::Lambda::Function', Properties: { Runtime: 'nodejs22.x' } },
    }),
    // A nested template's resources count as prod's too.
    template({ Alarm: { Type: 'AWS::CloudWatch::Alarm', Properties: { Threshold: 1 } } }),
  ]);

  it('covers a preview that sets fewer properties of the same types', () => {
    const preview = shapes([
      template({
        Table: { Type: 'AWS::DynamoDB::Table', Properties: { BillingMode: 'PAY_PER_REQUEST' } },
        Other: { Type: 'AWS::Lambda::Function', Properties: { Runtime: 'nodejs22.x' } },
      }),
    ]);
    expect(notDeclaredIn(prod, preview)).toEqual([]);
  });

  it('names a resource type and a property that prod does not declare', () => {
    const preview = shapes([
      template({
        Table: {
          Type: 'AWS::DynamoDB::Table',
          Properties: { BillingMode: 'PAY_PER_REQUEST', StreamSpecification: {} },
        },
        Queue: { Type: 'AWS::SQS::Queue' },
      }),
    ]);
    expect(notDeclaredIn(prod, preview)).toEqual([
      'AWS::DynamoDB::Table.StreamSpecification',
      'AWS::SQS::Queue',
    ]);
  });
});

describe('the regions split between cfn-lint runs', () => {
  it('puts every region in exactly one group, the groups within one of each other in size', () => {
    const regions = Array.from({ length: 46 }, (_, i) => `region-${i}`);
    const groups = splitRegions(regions, 2);
    expect(groups).toHaveLength(2);
    expect(groups.flat().sort()).toEqual([...regions].sort());
    expect(groups.map((g) => g.length)).toEqual([23, 23]);
    expect(splitRegions(['us-east-1'], 2)).toEqual([['us-east-1']]);
  });
});

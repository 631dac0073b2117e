/** cdk-nag's AwsSolutions pack over a synthesised app: findings, and the acknowledgments on its constructs. */
import type { App } from 'aws-cdk-lib';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

export interface Finding {
  rule: string;
  path: string;
}

export const findingsOf = (pack: AwsSolutionsChecks, scope: App): Finding[] =>
  pack.validateScope(scope).violations.flatMap((violation) =>
    violation.violatingResources.map((resource) => ({
      rule: violation.ruleName,
      path: resource.constructPath ?? '',
    })),
  );

/** The pack with acknowledgments ignored: every finding the stack would have without them. */
export function unacknowledgedPack(): AwsSolutionsChecks {
  const pack = new AwsSolutionsChecks();
  // `isAcknowledged` is private API of cdk-nag's NagPack; the own property shadows it.
  Object.assign(pack, { isAcknowledged: () => false });
  return pack;
}

export function acknowledgmentsOf(scope: App) {
  return scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          rule: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

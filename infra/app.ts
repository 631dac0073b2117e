import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { createStageStack } from './stack.ts';

const app = new App();

// `-c stage=<name>` (default prod) picks the stack, `-c branch=<name>` tags it.
// Both env values stay undefined without credentials, leaving the stack environment-agnostic so synth works offline.
createStageStack(app, { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION });

// cdk-nag's AwsSolutions pack runs on every synth, so `cdk deploy` stops on a new unacknowledged finding.
// Acknowledgments live next to the constructs they concern (infra/stack.ts), each with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { createStageStack, stageEnvironment } from './stack.ts';

const app = new App();

// `-c stage=<name>` (default prod) picks the stack, `-c branch=<name>` tags it. The template is
// environment-agnostic unless `-c pinEnvironment=true` (see stageEnvironment).
createStageStack(app, stageEnvironment(app));

// cdk-nag's AwsSolutions pack runs on every synth, so `cdk deploy` stops on a new unacknowledged finding.
// Acknowledgments live next to the constructs they concern (infra/stack.ts), each with its reason.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

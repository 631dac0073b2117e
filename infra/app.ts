import { App } from 'aws-cdk-lib';
import { CommerceApiStack, PRODUCTION_STAGE } from './stack.ts';

const app = new App();

const stage: string = app.node.tryGetContext('stage') ?? PRODUCTION_STAGE;
const branch: string | undefined = app.node.tryGetContext('branch');

new CommerceApiStack(app, `CommerceApi-${stage}`, {
  stage,
  ...(branch ? { branch } : {}),
  // Both stay undefined without credentials, leaving the stack environment-agnostic so synth works offline.
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});

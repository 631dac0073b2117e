/** The prod front door's settings the shared synth and `npm run lint:cfn` pass (example domain, example ARN). */
export const PROD_FRONT_DOOR_CONTEXT = {
  apiOriginDomain: 'origin.api.example.com',
  apiOriginCertificateArn:
    'arn:aws:acm:eu-west-3:123456789012:certificate/00000000-0000-4000-8000-000000000000',
} as const;

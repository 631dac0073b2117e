/**
 * Abuse limits in the template (infra/front-door.ts, infra/stack.ts): prod behind CloudFront and a
 * WAF web ACL with rate-based rules answering the API's 429, the execute-api endpoint disabled, the
 * stage throttle as a backstop, the functions told to read CloudFront's viewer address, reserved
 * concurrency where one function could starve the rest, every operation granted its quota
 * counters. A preview gets none of the front door nor reserved concurrency; prod synthesised
 * without its origin domain (the rehearsal on moto, the local stack) gets no front door and a warning.
 */
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { OAUTH_PATH_PREFIXES, WAF_TOO_MANY_REQUESTS_BODY } from '../../infra/front-door.ts';
import { createStageStack, RESERVED_CONCURRENCY } from '../../infra/stack.ts';
import { STAGE_THROTTLE, WAF_RATE_LIMITS } from '../../shared/domain/limits.ts';
import { CLIENT_ADDRESS_HEADER_ENV } from '../../shared/env.ts';
import { operations } from '../../shared/operations.ts';
import { PROD_FRONT_DOOR_CONTEXT } from '../support/front-door-context.ts';
import { sharedStage } from '../support/stages.ts';

const prod = sharedStage('prod');
const preview = sharedStage('preview');

describe('prod: the front door', () => {
  it('the HTTP API has its execute-api endpoint disabled and a custom domain CloudFront calls', () => {
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { DisableExecuteApiEndpoint: true });
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
      DomainName: PROD_FRONT_DOOR_CONTEXT.apiOriginDomain,
      DomainNameConfigurations: [
        Match.objectLike({ CertificateArn: PROD_FRONT_DOOR_CONTEXT.apiOriginCertificateArn }),
      ],
    });
    prod.template.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
  });

  it('CloudFront forwards everything to that domain over HTTPS, caches nothing, and carries the web ACL', () => {
    const [distribution] = Object.values(prod.template.findResources('AWS::CloudFront::Distribution'));
    const config = distribution?.Properties.DistributionConfig;
    expect(config.Origins).toEqual([
      expect.objectContaining({
        DomainName: PROD_FRONT_DOOR_CONTEXT.apiOriginDomain,
        CustomOriginConfig: expect.objectContaining({ OriginProtocolPolicy: 'https-only' }),
      }),
    ]);
    expect(config.DefaultCacheBehavior).toMatchObject({
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      // The managed CachingDisabled and AllViewerExceptHostHeader policies.
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
    });
    const [aclId] = Object.keys(prod.template.findResources('AWS::WAFv2::WebACL'));
    expect(config.WebACLId).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
  });

  it('WAF: rate-based rules per IP (tighter on the OAuth paths) block with the API 429 and Retry-After', () => {
    const [acl] = Object.values(prod.template.findResources('AWS::WAFv2::WebACL'));
    const { Scope, Rules, CustomResponseBodies } = acl?.Properties ?? {};
    expect(Scope).toBe('CLOUDFRONT');
    expect(CustomResponseBodies['too-many-requests']).toEqual({
      ContentType: 'APPLICATION_JSON',
      Content: WAF_TOO_MANY_REQUESTS_BODY,
    });
    const block = {
      Block: {
        CustomResponse: {
          ResponseCode: 429,
          CustomResponseBodyKey: 'too-many-requests',
          ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }],
        },
      },
    };
    const byName = Object.fromEntries(Rules.map((rule: { Name: string }) => [rule.Name, rule]));
    expect(byName['all-per-ip']).toMatchObject({
      Action: block,
      Statement: { RateBasedStatement: { Limit: WAF_RATE_LIMITS.perIp, AggregateKeyType: 'IP' } },
    });
    const oauth = byName['oauth-per-ip'];
    expect(oauth).toMatchObject({
      Action: block,
      Statement: { RateBasedStatement: { Limit: WAF_RATE_LIMITS.oauthPerIp, AggregateKeyType: 'IP' } },
    });
    expect(WAF_RATE_LIMITS.oauthPerIp).toBeLessThan(WAF_RATE_LIMITS.perIp);
    const prefixes = oauth.Statement.RateBasedStatement.ScopeDownStatement.OrStatement.Statements.map(
      (statement: { ByteMatchStatement: { SearchString: string } }) =>
        statement.ByteMatchStatement.SearchString,
    );
    expect(prefixes).toEqual([...OAUTH_PATH_PREFIXES]);
    // A CLOUDFRONT-scope ACL exists only in us-east-1: the template refuses any other region up front.
    expect(JSON.stringify(prod.template.toJSON().Rules)).toContain('us-east-1');
  });

  it('the functions read the caller address from CloudFront-Viewer-Address; the issuer is the front door', () => {
    const http = Object.values(prod.template.findResources('AWS::Lambda::Function')).filter(
      (resource) => resource.Properties.Environment?.Variables?.ISSUER_URL !== undefined,
    );
    expect(http.length).toBeGreaterThan(operations.length);
    for (const fn of http) {
      expect(fn.Properties.Environment.Variables[CLIENT_ADDRESS_HEADER_ENV]).toBe(
        'cloudfront-viewer-address',
      );
      expect(JSON.stringify(fn.Properties.Environment.Variables.ISSUER_URL)).toContain('DomainName');
    }
  });
});

describe('quotas and concurrency in the template', () => {
  it('the stage throttle is the backstop, in both stages', () => {
    for (const stage of [prod, preview]) {
      stage.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        DefaultRouteSettings: Match.objectLike({
          ThrottlingBurstLimit: STAGE_THROTTLE.burstLimit,
          ThrottlingRateLimit: STAGE_THROTTLE.rateLimit,
        }),
      });
    }
  });

  it('prod reserves concurrency for the functions a flood could drive; a preview reserves none', () => {
    const reserved = Object.values(prod.template.findResources('AWS::Lambda::Function'))
      .map((resource) => resource.Properties.ReservedConcurrentExecutions)
      .filter((value) => value !== undefined);
    expect(reserved.sort()).toEqual(Object.values(RESERVED_CONCURRENCY).sort());
    // The unreserved pool (AWS keeps at least 100 of the default 1000) stays for everything else.
    expect(reserved.reduce((sum: number, value: number) => sum + value, 0)).toBeLessThanOrEqual(900);
    const previewReserved = Object.values(preview.template.findResources('AWS::Lambda::Function')).filter(
      (resource) => resource.Properties.ReservedConcurrentExecutions !== undefined,
    );
    expect(previewReserved).toEqual([]);
  });

  it('every operation may count its requests in the quota counters (UpdateItem on QUOTA#*), nothing more there', () => {
    for (const operation of operations) {
      expect(operation.access).toContainEqual({ actions: ['dynamodb:UpdateItem'], leadingKeys: ['quota'] });
    }
  });
});

describe('stages without the front door', () => {
  it('a preview: no CloudFront, no WAF, the execute-api endpoint open', () => {
    preview.template.resourceCountIs('AWS::CloudFront::Distribution', 0);
    preview.template.resourceCountIs('AWS::WAFv2::WebACL', 0);
    const [api] = Object.values(preview.template.findResources('AWS::ApiGatewayV2::Api'));
    expect(api?.Properties.DisableExecuteApiEndpoint).not.toBe(true);
  });

  it('prod without its origin domain (the moto rehearsal, the local stack): no front door, and a warning that says so', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = createStageStack(app);
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::CloudFront::Distribution', 0);
    template.resourceCountIs('AWS::WAFv2::WebACL', 0);
    Annotations.fromStack(stack).hasWarning('*', Match.stringLikeRegexp('prod without its front door'));
  });
});

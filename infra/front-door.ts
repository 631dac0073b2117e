/**
 * The prod front door: CloudFront in front of the HTTP API, AWS WAF (rate-based rules) on the
 * distribution, and the API reachable only through it.
 *
 * HTTP APIs take no WAF web ACL, so the ACL sits on CloudFront (scope CLOUDFRONT). CloudFront reaches
 * the API through the API's custom domain (`originDomainName`, its regional ACM certificate), and the
 * default `execute-api` endpoint is disabled (infra/stack.ts), so that nothing bypasses the WAF.
 * CloudFront passes the viewer's address as `CloudFront-Viewer-Address` (the managed
 * AllViewerExceptHostHeader policy), which the functions' per-address quota reads
 * (`CLIENT_ADDRESS_HEADER`). Nothing is cached: every answer depends on its credential.
 *
 * A CLOUDFRONT-scope web ACL exists only in us-east-1: deployed elsewhere, pass the ARN of one
 * created there (`webAclArn`); otherwise a template rule refuses the deployment outside us-east-1
 * before anything is created.
 */
import { Aws, CfnOutput, CfnRule, Duration, Fn, Validations } from 'aws-cdk-lib';
import { ApiMapping, DomainName, type HttpApi, type HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  PriceClass,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { WAF_RATE_LIMITS } from '../shared/domain/limits.ts';

export interface FrontDoorProps {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  /** The API's custom domain CloudFront calls (`origin.api.example.com`), and its regional ACM certificate. */
  readonly originDomainName: string;
  readonly originCertificateArn: string;
  /** The public names and their us-east-1 ACM certificate; none: the distribution's own domain. */
  readonly aliases?: readonly string[];
  readonly viewerCertificateArn?: string;
  /** A CLOUDFRONT-scope web ACL made in us-east-1; none: one is made here (the stack must then be in us-east-1). */
  readonly webAclArn?: string;
  readonly stageName: string;
}

/** WAF's answer to a rate rule's block: the API's own 429 shape (shared/domain/errors.ts `TooManyRequests`). */
export const WAF_TOO_MANY_REQUESTS_BODY = JSON.stringify({
  error: 'TooManyRequests',
  detail: 'Rate limit exceeded: retry after 60 seconds.',
});

/** The paths of the tighter rate rule: the OAuth endpoints and discovery documents. */
export const OAUTH_PATH_PREFIXES = ['/v1/oauth2/', '/.well-known/'] as const;

export class FrontDoor extends Construct {
  readonly distribution: Distribution;
  readonly webAcl?: CfnWebACL;
  readonly originDomain: DomainName;
  /** `https://<alias or distribution domain>`: the issuer when none is configured. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: FrontDoorProps) {
    super(scope, id);

    this.originDomain = new DomainName(this, 'OriginDomain', {
      domainName: props.originDomainName,
      certificate: Certificate.fromCertificateArn(this, 'OriginCertificate', props.originCertificateArn),
    });
    new ApiMapping(this, 'OriginMapping', {
      api: props.api,
      domainName: this.originDomain,
      stage: props.stage,
    });

    let webAclArn = props.webAclArn;
    if (!webAclArn) {
      this.webAcl = this.createWebAcl(props.stageName);
      webAclArn = this.webAcl.attrArn;
      new CfnRule(this, 'WebAclRegion', {
        assertions: [
          {
            assert: Fn.conditionEquals(Aws.REGION, 'us-east-1'),
            assertDescription:
              'A CLOUDFRONT-scope WAF web ACL can only be created in us-east-1: deploy prod there, or pass -c webAclArn=<an ACL made in us-east-1>.',
          },
        ],
      });
    }

    const aliases = props.aliases ?? [];
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `commerce-api ${props.stageName}`,
      defaultBehavior: {
        origin: new HttpOrigin(props.originDomainName, {
          protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
          // The functions answer within 10 s; CloudFront's default 30 s keeps a margin.
          readTimeout: Duration.seconds(30),
        }),
        viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: AllowedMethods.ALLOW_ALL,
        cachePolicy: CachePolicy.CACHING_DISABLED,
        originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      },
      webAclId: webAclArn,
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      ...(aliases.length > 0 && props.viewerCertificateArn
        ? {
            domainNames: [...aliases],
            certificate: Certificate.fromCertificateArn(
              this,
              'ViewerCertificate',
              props.viewerCertificateArn,
            ),
            minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
          }
        : {}),
    });
    this.url = `https://${aliases[0] ?? this.distribution.distributionDomainName}`;
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason: 'A billing API serves merchants and their customers worldwide: no geo restriction.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          'API Gateway writes an access log line per request (infra/stack.ts); CloudFront standard logs would need an ACL-enabled S3 bucket for the same facts.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'With aliases and their certificate the viewer policy is TLSv1.2_2021; the distribution domain alone (no alias) uses the CloudFront default certificate, whose policy CloudFront fixes.',
      },
    );
    new CfnOutput(this, 'Url', { value: this.url });
  }

  /** Rate-based rules per source IP (5-minute windows), blocking with the API's 429 and `Retry-After`. */
  private createWebAcl(stageName: string): CfnWebACL {
    const block429 = {
      block: {
        customResponse: {
          responseCode: 429,
          customResponseBodyKey: 'too-many-requests',
          responseHeaders: [{ name: 'Retry-After', value: '60' }],
        },
      },
    };
    const visibility = (metricName: string) => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });
    return new CfnWebACL(this, 'WebAcl', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`commerce-api-${stageName}`),
      customResponseBodies: {
        'too-many-requests': { contentType: 'APPLICATION_JSON', content: WAF_TOO_MANY_REQUESTS_BODY },
      },
      rules: [
        {
          name: 'oauth-per-ip',
          priority: 0,
          action: block429,
          statement: {
            rateBasedStatement: {
              limit: WAF_RATE_LIMITS.oauthPerIp,
              aggregateKeyType: 'IP',
              evaluationWindowSec: 300,
              scopeDownStatement: {
                orStatement: {
                  statements: OAUTH_PATH_PREFIXES.map((prefix) => ({
                    byteMatchStatement: {
                      fieldToMatch: { uriPath: {} },
                      positionalConstraint: 'STARTS_WITH',
                      searchString: prefix,
                      textTransformations: [{ priority: 0, type: 'NONE' }],
                    },
                  })),
                },
              },
            },
          },
          visibilityConfig: visibility('oauth-per-ip'),
        },
        {
          name: 'all-per-ip',
          priority: 1,
          action: block429,
          statement: {
            rateBasedStatement: {
              limit: WAF_RATE_LIMITS.perIp,
              aggregateKeyType: 'IP',
              evaluationWindowSec: 300,
            },
          },
          visibilityConfig: visibility('all-per-ip'),
        },
        {
          name: 'aws-ip-reputation',
          priority: 2,
          overrideAction: { none: {} },
          statement: {
            managedRuleGroupStatement: { vendorName: 'AWS', name: 'AWSManagedRulesAmazonIpReputationList' },
          },
          visibilityConfig: visibility('aws-ip-reputation'),
        },
      ],
    });
  }
}

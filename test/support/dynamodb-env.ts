/**
 * Setup file of the projects that use DynamoDB Local: points this worker's environment at its own
 * project's engine before a test file (or a handler module it imports) reads it. The workers inherit
 * vitest's environment, in which each project's global setup wrote its engine in turn, so without
 * this every project would talk to the engine set up last.
 */
import { inject } from 'vitest';

process.env.AWS_ENDPOINT_URL_DYNAMODB = inject('dynamodbEndpoint');

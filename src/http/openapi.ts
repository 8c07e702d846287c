import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { authModeOf } from '../access/guard.ts';
import { SCOPES } from '../access/scopes.ts';
import type { Config } from '../config.ts';
import { CreditsExhaustedError, type ErrorBody } from '../lib/errors.ts';
import { type ErrorShape, errorShapeOf, shapeErrorBody } from './error-handler.ts';
import { addExamples, addParameterExamples } from './openapi-examples.ts';
import type { RouteAuthConfig } from './types.ts';

const errorBody = {
  type: 'object',
  required: ['error', 'message', 'statusCode'],
  properties: {
    error: { type: 'string', description: 'Error class, e.g. NotFoundError', examples: ['ValidationError'] },
    message: { type: 'string', examples: ['Invalid request'] },
    statusCode: { type: 'integer', examples: [422] },
    details: {
      type: 'array',
      description: 'ValidationError only: one entry per failing field',
      items: {
        type: 'object',
        properties: {
          field: { type: 'string', examples: ['body.name'] },
          message: { type: 'string', examples: ['Too small: expected string to have >=1 characters'] },
        },
      },
    },
  },
};

/** OpenAI's error object in `error`, on the routes OpenAI's clients call (src/http/error-handler.ts). */
const openAiErrorBody = {
  type: 'object',
  required: ['error', 'message', 'statusCode'],
  properties: {
    ...errorBody.properties,
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string', examples: ['Unknown model "gpt-9". Available models: gpt-4o-mini'] },
        type: {
          type: 'string',
          description: "Error class, or OpenAI's type for one of its codes",
          examples: ['ValidationError'],
        },
        param: { type: 'null' },
        code: {
          type: ['string', 'null'],
          description: "OpenAI's code, e.g. model_not_found",
          examples: ['model_not_found'],
        },
      },
    },
  },
};

/** Anthropic's error object, on the Anthropic-compatible routes. */
const anthropicErrorBody = {
  type: 'object',
  required: ['type', 'error', 'message', 'statusCode'],
  properties: {
    type: { const: 'error' },
    error: {
      type: 'object',
      required: ['type', 'message'],
      properties: {
        type: { type: 'string', examples: ['invalid_request_error'] },
        message: { type: 'string', examples: ['max_tokens: Required'] },
      },
    },
    message: errorBody.properties.message,
    statusCode: errorBody.properties.statusCode,
    details: errorBody.properties.details,
  },
};

const ERROR_SCHEMA: Record<ErrorShape, string> = {
  service: 'Error',
  openai: 'OpenAIError',
  anthropic: 'AnthropicError',
};

/** What each error answer looks like, with the service's own messages. */
function errorExample(code: number, scopes: readonly string[]): ErrorBody {
  const body = (error: string, message: string) => ({ error, message, statusCode: code });
  switch (code) {
    case 400:
      return body('BadRequestError', 'Body is not valid JSON');
    case 401:
      return body('UnauthorizedError', 'Missing bearer token (Authorization: Bearer <token>)');
    case 402:
      return body('CreditsExhaustedError', new CreditsExhaustedError().message);
    case 403:
      return body('ForbiddenError', `Missing required scope: ${scopes.join(' or ') || 'account'}`);
    case 422:
      return {
        ...body('ValidationError', 'Invalid request'),
        details: [{ field: 'body.name', message: 'Too small: expected string to have >=1 characters' }],
      };
    case 429:
      return body('TooManyRequestsError', 'Rate limit exceeded');
    default:
      return body('InternalServerError', 'Internal server error');
  }
}

/**
 * The reference's sections, in the order a newcomer needs them: the LLM gateway and MCP first, then what they
 * reach (connections, agents and their parts), then the account and operations. Swagger UI lists tags in this order.
 */
const API_TAGS = [
  { name: 'LLM', description: 'OpenAI-compatible gateway: chat completions and models, billed in credits.' },
  {
    name: 'MCP',
    description: 'The MCP endpoint (Streamable HTTP): one place for AI apps to reach connected services.',
  },
  { name: 'Connections', description: "OAuth and token connections to a user's external services." },
  { name: 'Providers', description: 'The connector catalog: providers and their tools.' },
  { name: 'Agents', description: 'Agents, their conversations, memories and files.' },
  { name: 'Tools and skills', description: 'Custom tools (sandboxed code) and skills agents can use.' },
  { name: 'Scheduled tasks', description: 'Agent prompts run on a cron schedule.' },
  { name: 'Knowledge bases', description: 'Sources compiled into a searchable wiki.' },
  { name: 'Messaging channels', description: 'Telegram, WhatsApp and web chat in front of an agent.' },
  { name: 'Webhooks', description: "Signed HTTP callbacks for an account's events (Standard Webhooks)." },
  { name: 'Accounts', description: 'The calling account.' },
  { name: 'Credits', description: 'Credit balance and history.' },
  {
    name: 'Activity',
    description: "What was done on the account's behalf: tool calls, agent runs, connection events.",
  },
  { name: 'Auth', description: 'Sign-up, sign-in, sessions and personal access tokens.' },
  { name: 'OAuth', description: 'The OAuth 2.1 authorization server for apps acting for a user.' },
  { name: 'Auth clients', description: 'OAuth clients (apps) registered by an account.' },
  { name: 'Operations', description: 'Health, readiness and metrics.' },
];

/** The reference's top-bar logo: the service's name, not the documentation tool's. */
const WORDMARK =
  '<svg xmlns="http://www.w3.org/2000/svg" width="180" height="32" viewBox="0 0 180 32"><text x="0" y="23" font-family="system-ui, sans-serif" font-size="22" font-weight="700" fill="#ffffff">Switchboard</text></svg>';

const errorResponse = (shape: ErrorShape, description: string, example: ErrorBody) => ({
  description,
  content: {
    'application/json': {
      schema: { $ref: `#/components/schemas/${ERROR_SCHEMA[shape]}` },
      example: shapeErrorBody(shape, example),
    },
  },
});

const pascal = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/**
 * An operation's name from its method and path (`GET /api/v1/agents/{agentId}` is `getAgentsByAgentId`): unique
 * as method and path are, and stable, so generated clients keep their names as routes are added.
 */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v1(?=\/)/, '')
    .split('/')
    .flatMap((segment) => {
      const param = /^\{(.+)\}$/.exec(segment)?.[1];
      return param ? ['by', param] : segment.split(/[^A-Za-z0-9]+/);
    })
    .filter(Boolean);
  return method.toLowerCase() + words.map(pascal).join('');
}

/**
 * OpenAPI 3.1 at /openapi.json, generated from the zod route schemas; each route also gets its security
 * requirement (scopes) and the §7 error answers it can give. A browsable reference is served at /docs.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard API',
        version: config.version,
        description:
          'Connector platform for AI applications. Errors answer `{error, message, statusCode}`; every ' +
          'answer carries `X-Request-Id`. Rate limits send `X-RateLimit-*` headers and, on 429, `Retry-After`.',
      },
      servers: [{ url: config.baseUrl }],
      tags: API_TAGS,
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: `Session token (sess_...), personal access token (pat_...) or OAuth access token. Scopes: ${Object.keys(SCOPES).join(', ')}`,
          },
          apiKeyAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'x-api-key',
            description:
              'The same tokens, as the Anthropic SDK and Claude Code send them (the Anthropic-compatible routes only)',
          },
        },
      },
    },
    transform: (doc) => {
      const out = jsonSchemaTransform(doc);
      const route = doc.route;
      const cfg = (route?.config ?? {}) as RouteAuthConfig;
      const mode = authModeOf(doc.url, cfg);
      const schema = (out.schema ?? {}) as Record<string, unknown> & { response?: Record<string, unknown> };
      if ((schema as { hide?: boolean }).hide) return out;
      addParameterExamples(schema.params);
      addParameterExamples(schema.querystring);
      addExamples(schema.body, '');
      const responses: Record<string, unknown> = { ...(schema.response ?? {}) };
      const shape = errorShapeOf(doc.url);
      const add = (code: number, description: string) => {
        responses[code] ??= errorResponse(shape, description, errorExample(code, cfg.scopes ?? []));
      };
      if (schema.body || schema.querystring || schema.params) {
        add(400, 'BadRequestError: malformed request');
        add(422, 'ValidationError: a field failed validation (see details)');
      }
      if (mode !== 'public') {
        schema.security = [
          { bearerAuth: cfg.scopes ?? [] },
          ...(cfg.apiKeyHeader ? [{ apiKeyAuth: cfg.scopes ?? [] }] : []),
        ];
        add(401, 'UnauthorizedError or TokenExpiredError');
        add(403, cfg.scopes?.length ? `ForbiddenError: needs scope ${cfg.scopes.join(' or ')}` : 'ForbiddenError');
        if (cfg.creditGuard) add(402, 'CreditsExhaustedError: the credit balance is zero');
        if (cfg.scopes?.length) {
          const note = `Requires scope: ${cfg.scopes.map((s) => `\`${s}\``).join(' or ')}.`;
          schema.description = schema.description ? `${schema.description}\n\n${note}` : note;
        }
      } else {
        schema.security = [];
      }
      add(429, 'TooManyRequestsError: rate limit exceeded (Retry-After header)');
      add(500, 'InternalServerError');
      return { ...out, schema: { ...schema, response: responses } };
    },
    transformObject: (doc) => {
      const out = jsonSchemaTransformObject(doc) as {
        components?: { schemas?: Record<string, unknown> };
        paths?: Record<string, Record<string, { operationId?: string }>>;
      };
      // The error bodies the answers refer to, named once each.
      out.components ??= {};
      out.components.schemas = {
        Error: errorBody,
        OpenAIError: openAiErrorBody,
        AnthropicError: anthropicErrorBody,
        ...out.components.schemas,
      };
      // Each component twice (`Agent`, and `AgentInput` for requests): both get the same examples.
      for (const [name, schema] of Object.entries(out.components?.schemas ?? {})) {
        addExamples(schema, name.replace(/Input$/, ''));
      }
      for (const [path, item] of Object.entries(out.paths ?? {})) {
        for (const [method, op] of Object.entries(item)) op.operationId ??= operationIdOf(method, path);
      }
      return out as ReturnType<typeof jsonSchemaTransformObject>;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true },
    theme: { title: 'Switchboard API reference' },
    logo: { type: 'image/svg+xml', content: Buffer.from(WORDMARK), href: '/', target: '_self' },
  });
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
}

import { createClient, type paths, type Schemas } from '../src/index.js';

type SearchQuery = NonNullable<paths['/api/v1/knowledge/bases/{kbId}/pages/search']['get']['parameters']['query']>;

/**
 * Compiled by `npm run typecheck` (tsc -p packages/client/test), never run: each `@ts-expect-error` below is a
 * mistake the generated types refuse. Were a type to become `any`, the directive would be unused, and tsc fails.
 */
const client = createClient({ baseUrl: 'http://127.0.0.1:8080', token: 'pat_example' });

export async function mistakesAreTypeErrors(): Promise<void> {
  // A misspelt field. (An extra field beside the right ones is not refused: openapi-fetch infers the body,
  // openapi-ts/openapi-typescript#2329.)
  // @ts-expect-error: an agent's field is `name`
  await client.POST('/api/v1/agents', { body: { nmae: 'Support bot' } });

  // A required field left out.
  // @ts-expect-error: `name` is required
  await client.POST('/api/v1/knowledge/bases', { body: { description: 'Everything we know' } });

  // A value of the wrong type.
  const kbId = 'kb_1';
  // @ts-expect-error: `limit` is a number
  const query: SearchQuery = { q: 'acme', limit: 'ten' };
  await client.GET('/api/v1/knowledge/bases/{kbId}/pages/search', { params: { path: { kbId }, query } });

  // A path parameter left out.
  // @ts-expect-error: the path needs `agentId`
  await client.GET('/api/v1/agents/{agentId}', { params: { path: {} } });

  // A route the service does not serve.
  // @ts-expect-error: there is no `/api/v1/agent`
  await client.GET('/api/v1/agent');

  // A method the route does not take.
  // @ts-expect-error: agents are changed with PUT, not PATCH
  await client.PATCH('/api/v1/agents/{agentId}', { params: { path: { agentId: 'agt_1' } }, body: { name: 'x' } });

  const { data, error } = await client.GET('/api/v1/agents/{agentId}', { params: { path: { agentId: 'agt_1' } } });
  if (data) {
    // The answer's fields are typed too.
    const name: string = data.name;
    // @ts-expect-error: an agent has no `title`
    void data.title;
    // @ts-expect-error: `temperature` is a number
    const temperature: string = data.temperature;
    void [name, temperature];
  }
  if (error) {
    // The error answer is the service's error body.
    const body: Schemas['Error'] = error;
    // @ts-expect-error: `statusCode` is a number
    const code: string = body.statusCode;
    void code;
  }
}

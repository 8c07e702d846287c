import { createClient, type Schemas } from '../src/index.js';

/** The example of docs/typed-client.md, compiled by `npm run typecheck` (never run): the guide's code type-checks. */
export async function guideExample(token: string): Promise<Schemas['KnowledgeSearchResult'] | undefined> {
  const client = createClient({ baseUrl: 'https://switchboard.example.com', token });

  const agent = await client.POST('/api/v1/agents', { body: { name: 'Support bot' } });
  if (agent.error) throw new Error(`${agent.response.status} ${agent.error.error}: ${agent.error.message}`);

  const chat = await client.POST('/api/v1/agents/{agentId}/chat/completions', {
    params: { path: { agentId: agent.data.id } },
    body: { messages: [{ role: 'user', content: 'Where is my order 1042?' }] },
  });
  console.log(chat.data?.choices[0]?.message.content, chat.response.headers.get('x-conversation-id'));
  // On the OpenAI-compatible routes the error body carries OpenAI's error object.
  const openAiType: string | undefined = chat.error?.error.type;

  const found = await client.GET('/api/v1/knowledge/bases/{kbId}/pages/search', {
    params: { path: { kbId: 'kb_5kY0bq9xTnq1y8Wv3mDgZA' }, query: { q: 'acme pricing' } },
  });
  const first: Schemas['KnowledgeSearchResult'] | undefined = found.data?.data[0];

  void openAiType;
  return first;
}

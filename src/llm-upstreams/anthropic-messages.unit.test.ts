import { describe, expect, it } from 'vitest';
import { fromMessagesRequest, messagesStreamTranslator, stopReasonOf } from './anthropic-messages.ts';
import type { ChatChunk } from './types.ts';

const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: string | null = null): ChatChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('Anthropic Messages translation', () => {
  it('streams text then two tool calls as three content blocks, each opened and closed in turn', () => {
    const t = messagesStreamTranslator('m');
    const events = [
      ...t.chunk(chunk({ role: 'assistant', content: 'Let me look.' })),
      ...t.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_a', function: { name: 'a', arguments: '{"x"' } }] })),
      ...t.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] })),
      ...t.chunk(chunk({ tool_calls: [{ index: 1, id: 'call_b', function: { name: 'b', arguments: '{}' } }] })),
      ...t.chunk(chunk({}, 'tool_calls')),
      ...t.end({ prompt_tokens: 9, completion_tokens: 4 }),
    ];
    expect(events.map((e) => `${e.type}${'index' in e ? `:${String(e.index)}` : ''}`)).toEqual([
      'message_start',
      'content_block_start:0',
      'content_block_delta:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1',
      'content_block_delta:1',
      'content_block_stop:1',
      'content_block_start:2',
      'content_block_delta:2',
      'content_block_stop:2',
      'message_delta',
      'message_stop',
    ]);
    expect(events[4]).toMatchObject({ content_block: { type: 'tool_use', id: 'call_a', name: 'a', input: {} } });
    expect(events.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 9, output_tokens: 4 },
    });
  });

  it('maps finish reasons back to stop reasons', () => {
    expect(['stop', 'length', 'tool_calls', 'content_filter', 'other', null].map(stopReasonOf)).toEqual([
      'end_turn',
      'max_tokens',
      'tool_use',
      'refusal',
      'end_turn',
      null,
    ]);
  });

  it('puts tool results before the rest of a user turn, marking errors', () => {
    const chat = fromMessagesRequest({
      max_tokens: 10,
      system: [
        { type: 'text', text: 'A' },
        { type: 'text', text: 'B' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'and now?' },
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'boom' }], is_error: true },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'system', content: 'A\n\nB' },
      { role: 'tool', tool_call_id: 't1', content: 'Error: boom' },
      { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
    ]);
    expect(chat).not.toHaveProperty('model');
  });
});

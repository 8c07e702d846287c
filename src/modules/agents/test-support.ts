import { expect } from 'vitest';

/**
 * The two messages a failed turn leaves, as `GET .../messages` answers them: the person's question and the
 * agent's turn holding no content, only the error (the chat page shows "The agent could not answer: …").
 */
export function failedTurnMessages(question: string, error: string): unknown[] {
  const message = (role: 'user' | 'assistant', content: string | null, failure: string | null) => ({
    id: expect.stringMatching(/^msg_/),
    role,
    content,
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    error: failure,
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  return [message('user', question, null), message('assistant', null, error)];
}

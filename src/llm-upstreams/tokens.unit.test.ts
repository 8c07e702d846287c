import { describe, expect, it } from 'vitest';
import { MAX_CHOICES, requestTokenBound } from './tokens.ts';

describe('requestTokenBound', () => {
  const text = [{ role: 'user', content: 'hi' }];

  it('counts the bytes of the body sent upstream, plus the fixed framing', () => {
    // The body is what the upstream reads and bills: a long prompt the caller sent counts through it.
    expect(requestTokenBound({ messages: text }, 1000, 4096).prompt).toBe(1000 + 256);
    expect(requestTokenBound({ messages: text }, 50_000, 4096).prompt).toBe(50_000 + 256);
  });

  it('adds 50,000 tokens for each non-text part', () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'https://example.test/a.png' } },
          { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        ],
      },
    ];
    expect(requestTokenBound({ messages }, 300, 4096).prompt).toBe(300 + 256 + 2 * 50_000);
  });

  it('bounds the completion by the output allowance times the choices, plus a prediction', () => {
    expect(requestTokenBound({ messages: text }, 10, 4096).completion).toBe(4096);
    expect(requestTokenBound({ messages: text, max_tokens: 100 }, 10, 4096).completion).toBe(100);
    expect(requestTokenBound({ messages: text, max_completion_tokens: 50_000 }, 10, 4096).completion).toBe(4096);
    expect(requestTokenBound({ messages: text, max_tokens: 100, n: 3, best_of: 5 }, 10, 4096).completion).toBe(500);
    expect(requestTokenBound({ messages: text, max_tokens: 1, n: 10_000 }, 10, 4096).completion).toBe(MAX_CHOICES);
    const prediction = { type: 'content', content: 'été' };
    expect(requestTokenBound({ messages: text, max_tokens: 100, prediction }, 10, 4096).completion).toBe(
      100 + Buffer.byteLength(JSON.stringify(prediction)),
    );
  });
});

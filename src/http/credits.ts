import type { ServerResponse } from 'node:http';

/** What a credit-consuming answer reports (SPEC §8): this request's cost and the balance after it. */
export interface CreditFigures {
  consumed: number;
  remaining: number;
}

export function creditHeaders(credits: CreditFigures): Record<'X-Credits-Consumed' | 'X-Credits-Remaining', string> {
  return { 'X-Credits-Consumed': String(credits.consumed), 'X-Credits-Remaining': String(credits.remaining) };
}

/**
 * Headers of a stream, sent before its cost is known: nothing consumed yet, the balance at admission, and the
 * trailers that will carry the final figures. Trailers exist only on a chunked body, and Node refuses to send a
 * head announcing them otherwise (ERR_HTTP_TRAILER_INVALID, the answer never leaves): an HTTP/1.0 client's stream
 * is not chunked, so it gets the SSE comment alone. Call it with the response whose head goes out without a length.
 */
export function streamCreditHeaders(raw: ServerResponse, balanceBefore: number): Record<string, string> {
  const headers = creditHeaders({ consumed: 0, remaining: balanceBefore });
  if (!raw.useChunkedEncodingByDefault) return headers;
  return { ...headers, Trailer: 'X-Credits-Consumed, X-Credits-Remaining' };
}

/**
 * The final figures of an SSE stream whose headers are gone: the HTTP trailers are set, and the SSE comment
 * (clients skip it, people and scripts can read it) is answered for the caller to write last before the end.
 */
export function streamCreditsTail(raw: ServerResponse, credits: CreditFigures): string {
  raw.addTrailers(creditHeaders(credits));
  return `: x-credits-consumed=${credits.consumed}; x-credits-remaining=${credits.remaining}\n\n`;
}

/** Writes the final figures of an SSE stream (streamCreditsTail). Call it just before ending the response. */
export function writeStreamCredits(raw: ServerResponse, credits: CreditFigures): void {
  raw.write(streamCreditsTail(raw, credits));
}

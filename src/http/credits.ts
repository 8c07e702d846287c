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
 * trailers that will carry the final figures.
 */
export function streamCreditHeaders(balanceBefore: number): Record<string, string> {
  return {
    ...creditHeaders({ consumed: 0, remaining: balanceBefore }),
    Trailer: 'X-Credits-Consumed, X-Credits-Remaining',
  };
}

/**
 * The final figures of an SSE stream whose headers are gone: an SSE comment (clients skip it, people and
 * scripts can read it) and the HTTP trailers. Call it just before ending the response.
 */
export function writeStreamCredits(raw: ServerResponse, credits: CreditFigures): void {
  raw.write(`: x-credits-consumed=${credits.consumed}; x-credits-remaining=${credits.remaining}\n\n`);
  raw.addTrailers(creditHeaders(credits));
}

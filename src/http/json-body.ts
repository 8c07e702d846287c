import type { FastifyInstance } from 'fastify';
import { BadRequestError } from '../lib/errors.ts';
import { jsonBodyProblem } from '../lib/json.ts';

/**
 * fastify's JSON parser (with its prototype-poisoning checks), plus two rules for every route: the body nests
 * at most JSON_MAX_DEPTH levels (deeper, the recursive walks after us, JSON.stringify into jsonb among them,
 * would overflow the stack), and no string in it holds an unpaired surrogate, which no table can store. Each is
 * the caller's 400 here, once, rather than a 500 wherever the value goes next. The surrogate walk runs only for
 * a body with a surrogate escape: the common case costs one scan of the text and one walk of its containers.
 */
export function useJsonBodyParser(fastify: FastifyInstance): void {
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig;
  const parse = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, raw, done) => {
    const body = raw.toString();
    void parse(req, body, (err, value) => {
      if (err) return done(err, undefined);
      const problem = jsonBodyProblem(value, body);
      if (problem) return done(new BadRequestError(problem), undefined);
      done(null, value);
    });
  });
}

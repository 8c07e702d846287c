import type { FastifyInstance } from 'fastify';
import { BadRequestError } from '../lib/errors.ts';
import { hasLoneSurrogate, LONE_SURROGATE_MESSAGE } from '../lib/text.ts';

/** A `\uD800`-`\uDFFF` escape: the only way a JSON text can carry a lone surrogate (UTF-8 cannot encode one). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * fastify's JSON parser (with its prototype-poisoning checks), plus one rule for every route: no string in
 * the body may hold an unpaired surrogate, which no table can store. It is the caller's 400 here, once, rather
 * than a 500 or a silently changed value wherever a string reaches the database. Only a body with a surrogate
 * escape is walked: the common case costs one scan of the text.
 */
export function useJsonBodyParser(fastify: FastifyInstance): void {
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig;
  const parse = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, raw, done) => {
    const body = raw.toString();
    void parse(req, body, (err, value) => {
      if (err) return done(err, undefined);
      if (SURROGATE_ESCAPE.test(body) && hasLoneSurrogate(value))
        return done(new BadRequestError(LONE_SURROGATE_MESSAGE), undefined);
      done(null, value);
    });
  });
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, NotFoundError } from '../lib/errors.ts';
import { getKnowledgeBase, listKnowledgeBases } from '../modules/knowledge/bases.service.ts';
import { isSlug } from '../modules/knowledge/links.ts';
import {
  getKnowledgePage,
  knowledgeGraph,
  lintKnowledgeBase,
  listKnowledgeLogs,
  listKnowledgePages,
  listPageVersions,
  searchKnowledgePages,
} from '../modules/knowledge/pages.service.ts';
import type { LintFinding } from '../modules/knowledge/schema.ts';
import { CreateSource } from '../modules/knowledge/schema.ts';
import { createKnowledgeSource, listKnowledgeSources } from '../modules/knowledge/sources.service.ts';
import { type Form, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { basePath, KNOWLEDGE_PATH, knowledgePage, wikiPage } from './knowledge-pages.ts';

const KB_ID = /^kb_[A-Za-z0-9_-]{1,96}$/;
/** What the page says after an action (post-redirect-get: the text travels in the flash cookie). */
const NOTICES = {
  added: 'Source added: it is compiled in the background.',
  linted: 'Health check done: the findings are below.',
} as const;
const MAX_PAGES = 500;

/** The wiki in the account pages (`/account/knowledge`), over the knowledge services. */
export async function knowledgePageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed } = pageHelpers(app, oauth);
  const page = { schema: { hide: true }, config: { auth: 'public' as const } };

  async function render(
    req: FastifyRequest,
    reply: FastifyReply,
    current: SignedIn,
    kbId: string | undefined,
    opts: {
      q?: string;
      tag?: string;
      notice?: string;
      error?: string;
      draft?: { name: string; text: string; url: string };
    } = {},
    status = 200,
  ) {
    const ctx = serviceContextOf(req, current.actor);
    const bases = (await listKnowledgeBases(ctx, { page: 1, limit: 100 })).data;
    const base = kbId ? await getKnowledgeBase(ctx, kbId) : (bases.find((b) => b.isDefault) ?? bases[0]);
    if (!base) throw new Error('listing made no default base');
    const q = (opts.q ?? '').trim().slice(0, 200);
    const [pages, sources, graph, logs, results] = await Promise.all([
      listKnowledgePages(ctx, base.id, { page: 1, limit: 100 }),
      listKnowledgeSources(ctx, base.id, { page: 1, limit: 20 }),
      knowledgeGraph(ctx, base.id),
      listKnowledgeLogs(ctx, base.id, { page: 1, limit: 50 }),
      q ? searchKnowledgePages(ctx, base.id, { q, limit: 10 }) : Promise.resolve(undefined),
    ]);
    // Every page for the index (the list is by title); a very large base shows its first MAX_PAGES.
    let all = pages.data;
    for (let p = 2; all.length < Math.min(pages.pagination.total, MAX_PAGES); p++) {
      all = [...all, ...(await listKnowledgePages(ctx, base.id, { page: p, limit: 100 })).data];
    }
    const lastLint = logs.data.find((l) => l.kind === 'lint');
    return send(
      reply,
      knowledgePage({
        user: current.user,
        csrf: csrf(req, reply),
        bases,
        base,
        pages: all,
        pageTotal: pages.pagination.total,
        tag: (opts.tag ?? '').slice(0, 50),
        q,
        results,
        sources: sources.data,
        graph,
        lint: lastLint
          ? { at: lastLint.createdAt, findings: (lastLint.details.report as LintFinding[] | undefined) ?? [] }
          : undefined,
        notice: opts.notice,
        error: opts.error,
        draft: opts.draft,
      }),
      status,
    );
  }

  /** A base id from the URL, or a 404 page for anything that is not one of this account's bases. */
  async function withBase(
    req: FastifyRequest,
    reply: FastifyReply,
    then: (current: SignedIn, kbId: string) => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    const { kbId } = req.params as { kbId: string };
    try {
      if (!KB_ID.test(kbId)) throw new NotFoundError(`Knowledge base ${kbId.slice(0, 40)} not found`);
      return await then(current, kbId);
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return render(req, reply, current, undefined, { error: err.message }, err.statusCode === 403 ? 403 : 404);
    }
  }

  app.get(KNOWLEDGE_PATH, page, async (req, reply) => {
    const current = await signedIn(req, reply);
    if (!current) return reply;
    return render(req, reply, current, undefined);
  });

  app.get(`${KNOWLEDGE_PATH}/:kbId`, page, (req, reply) =>
    withBase(req, reply, (current, kbId) => {
      const query = req.query as Record<string, unknown>;
      return render(req, reply, current, kbId, {
        q: typeof query.q === 'string' ? query.q : '',
        tag: typeof query.tag === 'string' ? query.tag : '',
        ...takeFlash(req, reply),
      });
    }),
  );

  app.post(`${KNOWLEDGE_PATH}/:kbId/sources`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withBase(req, reply, async (current, kbId) => {
      const draft = { name: one(form, 'name'), text: one(form, 'text'), url: one(form, 'url').trim() };
      const input = draft.url
        ? { type: 'url' as const, name: draft.name, url: draft.url }
        : { type: 'text' as const, name: draft.name, rawContent: draft.text };
      const parsed = CreateSource.safeParse(input);
      if (!parsed.success) {
        const why = parsed.error.issues.map((i) => i.message).join('; ');
        return render(req, reply, current, kbId, { error: `The source was not added: ${why}`, draft }, 422);
      }
      await createKnowledgeSource(serviceContextOf(req, current.actor), kbId, parsed.data);
      return redirectWithFlash(req, reply, basePath(kbId), { notice: NOTICES.added });
    });
  });

  app.post(`${KNOWLEDGE_PATH}/:kbId/lint`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withBase(req, reply, async (current, kbId) => {
      await lintKnowledgeBase(serviceContextOf(req, current.actor), kbId);
      return redirectWithFlash(req, reply, `${basePath(kbId)}#lint-h`, { notice: NOTICES.linted });
    });
  });

  app.get(`${KNOWLEDGE_PATH}/:kbId/pages/:slug`, page, (req, reply) =>
    withBase(req, reply, async (current, kbId) => {
      const { slug } = req.params as { slug: string };
      if (!isSlug(slug)) throw new NotFoundError('No such page');
      const ctx = serviceContextOf(req, current.actor);
      const [base, wiki, versions] = await Promise.all([
        getKnowledgeBase(ctx, kbId),
        getKnowledgePage(ctx, kbId, slug),
        listPageVersions(ctx, kbId, slug, { page: 1, limit: 50 }),
      ]);
      return send(
        reply,
        wikiPage({ user: current.user, csrf: csrf(req, reply), base, page: wiki, versions: versions.data }),
      );
    }),
  );
}

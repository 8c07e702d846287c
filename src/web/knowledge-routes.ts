import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceContextOf } from '../auth/guard.ts';
import type { OAuthServer } from '../auth/oauth/server.ts';
import type { App } from '../http/types.ts';
import { AppError, ConflictError, NotFoundError, PayloadTooLargeError } from '../lib/errors.ts';
import { getKnowledgeBase, listKnowledgeBases } from '../modules/knowledge/bases.service.ts';
import { isSlug, wikilinkTargets } from '../modules/knowledge/links.ts';
import {
  getKnowledgePage,
  knowledgeGraph,
  lintKnowledgeBase,
  listKnowledgeLogs,
  listKnowledgePages,
  listPageVersions,
  pageTitles,
  searchKnowledgePages,
} from '../modules/knowledge/pages.service.ts';
import type { LintFinding } from '../modules/knowledge/schema.ts';
import { CreateSource, MAX_SOURCE_CHARS } from '../modules/knowledge/schema.ts';
import {
  createKnowledgeSource,
  deleteKnowledgeSource,
  getKnowledgeSource,
  listKnowledgeSources,
  reprocessKnowledgeSource,
} from '../modules/knowledge/sources.service.ts';
import { KNOWLEDGE_SCRIPT } from './assets.ts';
import { type Form, one, pageHelpers, type SignedIn, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { basePath, deleteSourcePage, KNOWLEDGE_PATH, knowledgePage, wikiPage } from './knowledge-pages.ts';

const KB_ID = /^kb_[A-Za-z0-9_-]{1,96}$/;
const SOURCE_ID = /^ksrc_[A-Za-z0-9_-]{1,96}$/;
/**
 * The largest file the upload form takes: a file source travels to the service as a base64 `data:` URI, which
 * must fit the source's MAX_SOURCE_CHARS as it does over the REST API (the room for the URI's prefix kept).
 */
export const PAGE_FILE_MAX_BYTES = Math.floor((MAX_SOURCE_CHARS - 100) / 4) * 3;
/** What the page says after an action (post-redirect-get: the text travels in the flash cookie). */
const NOTICES = {
  added: 'Source added: it is compiled in the background.',
  retried: 'Source queued: it is compiled again in the background.',
  deleted: 'Source deleted.',
  linted: 'Health check done: the findings are below.',
} as const;
const MAX_PAGES = 500;

/** The wiki in the account pages (`/account/knowledge`), over the knowledge services. */
export async function knowledgePageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const { csrf, csrfOk, signedIn, csrfFailed, currentUser } = pageHelpers(app, oauth);
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
      fileName?: string;
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
        fileName: opts.fileName,
        fileMaxBytes: PAGE_FILE_MAX_BYTES,
        script: KNOWLEDGE_SCRIPT.path,
      }),
      status,
      { scripts: true },
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

  // The upload form: multipart is read by this route only (every other page keeps its url-encoded forms).
  await app.register(async (files) => {
    await files.register(multipart, {
      limits: { fileSize: PAGE_FILE_MAX_BYTES, files: 1, fields: 4, parts: 5, fieldSize: 4096 },
      throwFileSizeLimit: true,
    });
    files.post(
      `${KNOWLEDGE_PATH}/:kbId/sources/file`,
      { ...page, bodyLimit: PAGE_FILE_MAX_BYTES + 64 * 1024 },
      async (req, reply) => {
        let upload: { form: Form; file?: { filename: string; bytes: Buffer } };
        try {
          upload = await readUpload(req);
        } catch (err) {
          const refusal = uploadRefusal(err);
          req.log.info({ err }, 'upload form not read');
          // The token could not be read with the file: a signed-in user gets the form again with the reason.
          return withBase(req, reply, (current, kbId) =>
            render(req, reply, current, kbId, { error: refusal.message }, refusal.status),
          );
        }
        const { form, file } = upload;
        if (!csrfOk(req, form)) return csrfFailed(reply);
        return withBase(req, reply, async (current, kbId) => {
          const fileName = one(form, 'name').trim();
          const refuse = (message: string, status: number) =>
            render(req, reply, current, kbId, { error: `The file was not added: ${message}`, fileName }, status);
          if (!file || file.bytes.length === 0) return refuse('choose a file to upload.', 422);
          const parsed = CreateSource.safeParse({
            type: 'file',
            name: (fileName || file.filename).slice(0, 300),
            rawContent: `data:application/octet-stream;base64,${file.bytes.toString('base64')}`,
            metadata: { filename: file.filename.slice(0, 300) },
          });
          if (!parsed.success) return refuse(parsed.error.issues.map((i) => i.message).join('; '), 422);
          try {
            await createKnowledgeSource(serviceContextOf(req, current.actor), kbId, parsed.data);
          } catch (err) {
            if (err instanceof AppError && (err.statusCode === 413 || err.statusCode === 422)) {
              return refuse(err.message, err.statusCode);
            }
            throw err;
          }
          return redirectWithFlash(req, reply, basePath(kbId), { notice: NOTICES.added });
        });
      },
    );
  });

  /** The statuses of the base's newest sources and its page count, for the page's progress script. */
  app.get(`${KNOWLEDGE_PATH}/:kbId/status`, page, async (req, reply) => {
    const current = await currentUser(req);
    if (!current) return reply.code(401).header('cache-control', 'no-store').send({ error: 'Sign in again' });
    const { kbId } = req.params as { kbId: string };
    const ctx = serviceContextOf(req, current.actor);
    try {
      if (!KB_ID.test(kbId)) throw new NotFoundError('No such knowledge base');
      const [sources, pages] = await Promise.all([
        listKnowledgeSources(ctx, kbId, { page: 1, limit: 20 }),
        listKnowledgePages(ctx, kbId, { page: 1, limit: 1 }),
      ]);
      return reply.header('cache-control', 'no-store').send({
        sources: sources.data.map((s) => ({ id: s.id, status: s.status, error: s.error })),
        pageTotal: pages.pagination.total,
      });
    } catch (err) {
      if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
      return reply.code(404).header('cache-control', 'no-store').send({ error: 'No such knowledge base' });
    }
  });

  /** The source of the URL (a 404 page for anything that is not one of this base's). */
  function sourceIdOf(req: FastifyRequest): string {
    const { sourceId } = req.params as { sourceId: string };
    if (!SOURCE_ID.test(sourceId)) throw new NotFoundError(`Source ${sourceId.slice(0, 40)} not found`);
    return sourceId;
  }

  app.post(`${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/reprocess`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withBase(req, reply, async (current, kbId) => {
      try {
        await reprocessKnowledgeSource(serviceContextOf(req, current.actor), kbId, sourceIdOf(req));
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        return redirectWithFlash(req, reply, basePath(kbId), { error: err.message });
      }
      return redirectWithFlash(req, reply, basePath(kbId), { notice: NOTICES.retried });
    });
  });

  app.get(`${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/delete`, page, (req, reply) =>
    withBase(req, reply, async (current, kbId) => {
      const source = await getKnowledgeSource(serviceContextOf(req, current.actor), kbId, sourceIdOf(req));
      return send(reply, deleteSourcePage({ user: current.user, csrf: csrf(req, reply), kbId, source }));
    }),
  );

  app.post(`${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/delete`, page, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    if (!csrfOk(req, form)) return csrfFailed(reply);
    return withBase(req, reply, async (current, kbId) => {
      await deleteKnowledgeSource(serviceContextOf(req, current.actor), kbId, sourceIdOf(req));
      return redirectWithFlash(req, reply, basePath(kbId), { notice: NOTICES.deleted });
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
      const titles = await pageTitles(ctx, kbId, [
        ...wikilinkTargets(wiki.content),
        ...wiki.backlinks,
        ...wiki.relationships.map((r) => r.targetSlug),
      ]);
      return send(
        reply,
        wikiPage({ user: current.user, csrf: csrf(req, reply), base, page: wiki, versions: versions.data, titles }),
      );
    }),
  );
}

/** The upload form's fields and its one file (`file`), read within the multipart limits. */
async function readUpload(req: FastifyRequest): Promise<{ form: Form; file?: { filename: string; bytes: Buffer } }> {
  const form: Form = {};
  let file: { filename: string; bytes: Buffer } | undefined;
  if (!req.isMultipart()) return { form: (req.body ?? {}) as Form };
  for await (const part of req.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      if (part.fieldname === 'file' && !file) file = { filename: part.filename || 'upload', bytes };
    } else if (typeof part.value === 'string') {
      form[part.fieldname] = part.value;
    }
  }
  return file ? { form, file } : { form };
}

/**
 * What the page says when the upload could not be read, with its status: past a size limit (413), else a
 * malformed form (400: no boundary, a body cut short; reading the request is all that failed).
 */
function uploadRefusal(err: unknown): { message: string; status: number } {
  const e = err as { code?: string; statusCode?: number };
  if (e.code === 'FST_REQ_FILE_TOO_LARGE' || err instanceof PayloadTooLargeError) {
    const limit = `${Math.floor(PAGE_FILE_MAX_BYTES / 1000)} KB`;
    return { message: `The file was not added: it is larger than the ${limit} a file source may be.`, status: 413 };
  }
  if (e.statusCode === 413) {
    return { message: 'The file was not added: the form has more files or fields than it may.', status: 413 };
  }
  return { message: 'The file was not added: the form could not be read. Try again.', status: 400 };
}

import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { OAuthServer } from '../access/oauth/server.ts';
import { uploadTooLarge } from '../http/multipart.ts';
import type { App } from '../http/types.ts';
import { AppError, ConflictError } from '../lib/errors.ts';
import type { LintFinding } from '../modules/knowledge/index.ts';
import {
  CreateSource,
  createKnowledgeSource,
  deleteKnowledgeSource,
  getKnowledgeBase,
  getKnowledgePage,
  getKnowledgeSource,
  isSlug,
  knowledgeGraph,
  lintKnowledgeBase,
  listKnowledgeBases,
  listKnowledgeLogs,
  listKnowledgePages,
  listKnowledgeSources,
  listPageVersions,
  MAX_SOURCE_CHARS,
  pageTitles,
  reprocessKnowledgeSource,
  searchKnowledgePages,
  wikilinkTargets,
} from '../modules/knowledge/index.ts';
import { KNOWLEDGE_SCRIPT } from './assets.ts';
import { type Form, send } from './common.ts';
import { redirectWithFlash, takeFlash } from './flash.ts';
import { basePath, deleteSourcePage, KNOWLEDGE_PATH, knowledgePage, wikiPage } from './knowledge-pages.ts';
import { FormError, formOf, idParam, type PageBase, pageRouter, text } from './page-route.ts';

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

const BaseParams = z.object({
  kbId: idParam(KB_ID, (id) => `Knowledge base ${id.slice(0, 40)} not found`),
});
const SourceParams = BaseParams.extend({
  sourceId: idParam(SOURCE_ID, (id) => `Source ${id.slice(0, 40)} not found`),
});
const WikiParams = BaseParams.extend({ slug: z.string().refine(isSlug, 'No such page') });
const BaseQuery = z.object({ q: text, tag: text });
const SourceForm = formOf({ name: text, text, url: text });
/** The upload form: its fields and its one file (see readUpload). */
const UploadForm = formOf({ name: text }).extend({
  file: z.object({ filename: z.string(), bytes: z.instanceof(Buffer) }).optional(),
});

/** The wiki in the account pages (`/account/knowledge`), over the knowledge services. */
export async function knowledgePageRoutes(app: App, oauth: OAuthServer): Promise<void> {
  const pages = pageRouter(app, oauth);

  async function render(
    { reply, current, ctx, csrf }: PageBase,
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
    const bases = (await listKnowledgeBases(ctx, { page: 1, limit: 100 })).data;
    const base = kbId ? await getKnowledgeBase(ctx, kbId) : (bases.find((b) => b.isDefault) ?? bases[0]);
    if (!base) throw new Error('listing made no default base');
    const q = (opts.q ?? '').trim().slice(0, 200);
    const [pageList, sources, graph, logs, results] = await Promise.all([
      listKnowledgePages(ctx, base.id, { page: 1, limit: 100 }),
      listKnowledgeSources(ctx, base.id, { page: 1, limit: 20 }),
      knowledgeGraph(ctx, base.id),
      listKnowledgeLogs(ctx, base.id, { page: 1, limit: 50 }),
      q ? searchKnowledgePages(ctx, base.id, { q, limit: 10 }) : Promise.resolve(undefined),
    ]);
    // Every page for the index (the list is by title); a very large base shows its first MAX_PAGES.
    let all = pageList.data;
    for (let p = 2; all.length < Math.min(pageList.pagination.total, MAX_PAGES); p++) {
      all = [...all, ...(await listKnowledgePages(ctx, base.id, { page: p, limit: 100 })).data];
    }
    const lastLint = logs.data.find((l) => l.kind === 'lint');
    return send(
      reply,
      knowledgePage({
        user: current.user,
        csrf: csrf(),
        bases,
        base,
        pages: all,
        pageTotal: pageList.pagination.total,
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

  /** Anything that is not one of this account's bases (or sources): the default base's page with a 404. */
  const refused = (page: PageBase, err: AppError) => {
    if (err.statusCode >= 500) return undefined;
    const status = err instanceof FormError ? 400 : err.statusCode === 403 ? 403 : 404;
    return render(page, undefined, { error: err.message }, status);
  };
  const onBase = { params: BaseParams, refused };
  const onSource = { params: SourceParams, refused };

  pages.get(KNOWLEDGE_PATH, {}, (page) => render(page, undefined));

  pages.get(`${KNOWLEDGE_PATH}/:kbId`, { ...onBase, query: BaseQuery }, (page) =>
    render(page, page.params.kbId, { ...page.query, ...takeFlash(page.req, page.reply) }),
  );

  pages.post(`${KNOWLEDGE_PATH}/:kbId/sources`, { ...onBase, form: SourceForm }, async (page) => {
    const { kbId } = page.params;
    const draft = { name: page.form.name, text: page.form.text, url: page.form.url.trim() };
    const input = draft.url
      ? { type: 'url' as const, name: draft.name, url: draft.url }
      : { type: 'text' as const, name: draft.name, rawContent: draft.text };
    const parsed = CreateSource.safeParse(input);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => i.message).join('; ');
      return render(page, kbId, { error: `The source was not added: ${why}`, draft }, 422);
    }
    await createKnowledgeSource(page.ctx, kbId, parsed.data);
    return redirectWithFlash(page.req, page.reply, basePath(kbId), { notice: NOTICES.added });
  });

  // The upload form: multipart is read by this route only (every other page keeps its url-encoded forms).
  await app.register(async (files) => {
    await files.register(multipart, {
      limits: { fileSize: PAGE_FILE_MAX_BYTES, files: 1, fields: 4, parts: 5, fieldSize: 4096 },
      throwFileSizeLimit: true,
    });
    pageRouter(files, oauth, pages.helpers).post(
      `${KNOWLEDGE_PATH}/:kbId/sources/file`,
      {
        ...onBase,
        form: UploadForm,
        bodyLimit: PAGE_FILE_MAX_BYTES + 64 * 1024,
        readBody: readUpload,
        // The token could not be read with the file: a signed-in user gets the form again with the reason.
        unreadable: (page, err) => {
          const refusal = uploadRefusal(err);
          page.req.log.info({ err }, 'upload form not read');
          return render(page, page.params.kbId, { error: refusal.message }, refusal.status);
        },
      },
      async (page) => {
        const { kbId } = page.params;
        const { file } = page.form;
        const fileName = page.form.name.trim();
        const refuse = (message: string, status: number) =>
          render(page, kbId, { error: `The file was not added: ${message}`, fileName }, status);
        if (!file || file.bytes.length === 0) return refuse('choose a file to upload.', 422);
        const parsed = CreateSource.safeParse({
          type: 'file',
          name: (fileName || file.filename).slice(0, 300),
          rawContent: `data:application/octet-stream;base64,${file.bytes.toString('base64')}`,
          metadata: { filename: file.filename.slice(0, 300) },
        });
        if (!parsed.success) return refuse(parsed.error.issues.map((i) => i.message).join('; '), 422);
        try {
          await createKnowledgeSource(page.ctx, kbId, parsed.data);
        } catch (err) {
          if (err instanceof AppError && (err.statusCode === 413 || err.statusCode === 422)) {
            return refuse(err.message, err.statusCode);
          }
          throw err;
        }
        return redirectWithFlash(page.req, page.reply, basePath(kbId), { notice: NOTICES.added });
      },
    );
  });

  /** The statuses of the base's newest sources and its page count, for the page's progress script (JSON). */
  pages.get(
    `${KNOWLEDGE_PATH}/:kbId/status`,
    {
      params: BaseParams,
      signedOut: (_req, reply) => reply.code(401).header('cache-control', 'no-store').send({ error: 'Sign in again' }),
      refused: ({ reply }, err) =>
        err.statusCode < 500
          ? reply.code(404).header('cache-control', 'no-store').send({ error: 'No such knowledge base' })
          : undefined,
    },
    async ({ reply, ctx, params }) => {
      const [sources, pageList] = await Promise.all([
        listKnowledgeSources(ctx, params.kbId, { page: 1, limit: 20 }),
        listKnowledgePages(ctx, params.kbId, { page: 1, limit: 1 }),
      ]);
      return reply.header('cache-control', 'no-store').send({
        sources: sources.data.map((s) => ({ id: s.id, status: s.status, error: s.error })),
        pageTotal: pageList.pagination.total,
      });
    },
  );

  pages.post(`${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/reprocess`, onSource, async ({ req, reply, ctx, params }) => {
    const { kbId } = params;
    try {
      await reprocessKnowledgeSource(ctx, kbId, params.sourceId);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return redirectWithFlash(req, reply, basePath(kbId), { error: err.message });
    }
    return redirectWithFlash(req, reply, basePath(kbId), { notice: NOTICES.retried });
  });

  pages.get(
    `${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/delete`,
    onSource,
    async ({ reply, current, ctx, csrf, params }) => {
      const source = await getKnowledgeSource(ctx, params.kbId, params.sourceId);
      return send(reply, deleteSourcePage({ user: current.user, csrf: csrf(), kbId: params.kbId, source }));
    },
  );

  pages.post(`${KNOWLEDGE_PATH}/:kbId/sources/:sourceId/delete`, onSource, async ({ req, reply, ctx, params }) => {
    await deleteKnowledgeSource(ctx, params.kbId, params.sourceId);
    return redirectWithFlash(req, reply, basePath(params.kbId), { notice: NOTICES.deleted });
  });

  pages.post(`${KNOWLEDGE_PATH}/:kbId/lint`, onBase, async ({ req, reply, ctx, params }) => {
    await lintKnowledgeBase(ctx, params.kbId);
    return redirectWithFlash(req, reply, `${basePath(params.kbId)}#lint-h`, { notice: NOTICES.linted });
  });

  pages.get(
    `${KNOWLEDGE_PATH}/:kbId/pages/:slug`,
    { params: WikiParams, refused },
    async ({ reply, current, ctx, csrf, params }) => {
      const { kbId, slug } = params;
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
        wikiPage({ user: current.user, csrf: csrf(), base, page: wiki, versions: versions.data, titles }),
      );
    },
  );
}

/** The upload form's fields and its one file (`file`), read within the multipart limits. */
async function readUpload(req: FastifyRequest): Promise<unknown> {
  if (!req.isMultipart()) return req.body ?? {};
  const form: Form & { file?: { filename: string; bytes: Buffer } } = {};
  let file: { filename: string; bytes: Buffer } | undefined;
  for await (const part of req.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      if (part.fieldname === 'file' && !file) file = { filename: part.filename || 'upload', bytes };
    } else if (typeof part.value === 'string' && part.fieldname !== 'file') {
      form[part.fieldname] = part.value;
    }
  }
  return file ? { ...form, file } : form;
}

/**
 * What the page says when the upload could not be read, with its status: past a size limit (413), else a
 * malformed form (400: no boundary, a body cut short; reading the request is all that failed).
 */
function uploadRefusal(err: unknown): { message: string; status: number } {
  const tooLarge = uploadTooLarge(err);
  if (tooLarge === 'file') {
    const limit = `${Math.floor(PAGE_FILE_MAX_BYTES / 1000)} KB`;
    return { message: `The file was not added: it is larger than the ${limit} a file source may be.`, status: 413 };
  }
  if (tooLarge === 'form') {
    return { message: 'The file was not added: the form has more files or fields than it may.', status: 413 };
  }
  return { message: 'The file was not added: the form could not be read. Try again.', status: 400 };
}

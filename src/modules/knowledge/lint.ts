import type { Executor } from '../../db/client.ts';
import type { KnowledgeBaseRow } from '../../db/schema/index.ts';
import { INDEX_SLUG, unlink } from './links.ts';
import { indexMarkdown, logEvent, regenerateIndex, writePage } from './pages.write.ts';
import * as repo from './repo.ts';
import type { LintFinding, LintReport } from './schema.ts';

/** A page untouched this long while the base kept changing is reported stale. */
export const STALE_AFTER_DAYS = 90;
/** Titles at least this alike (trigram similarity) are reported as possible duplicates. */
export const DUPLICATE_SIMILARITY = 0.6;
/** A page shorter than this with at most one page linking to it is proposed for merging into that page. */
export const CONSOLIDATE_BELOW_CHARS = 280;

/**
 * The health check of a base (SPEC §4 POST .../lint, and the job after a page is deleted). Safe repairs are
 * applied: dead links are unlinked (their text kept) in the compiler's pages, and a drifted index is written
 * again. Everything else is reported with the pages it names; pages a person wrote last are never changed.
 * Run inside a transaction with the base locked.
 */
export async function lintBase(tx: Executor, kb: KnowledgeBaseRow, now = new Date()): Promise<LintReport> {
  const findings: LintFinding[] = [];
  let repaired = 0;

  // Broken links: unlink in compiler pages; report those in pages a person wrote.
  const broken = await repo.brokenLinks(tx, kb.id);
  const byPage = new Map<string, { fromSlug: string; fromCompiledBy: string; targets: Set<string> }>();
  for (const b of broken) {
    const entry = byPage.get(b.fromPageId) ?? {
      fromSlug: b.fromSlug,
      fromCompiledBy: b.fromCompiledBy,
      targets: new Set(),
    };
    entry.targets.add(b.toSlug);
    byPage.set(b.fromPageId, entry);
  }
  for (const { fromSlug, fromCompiledBy, targets } of byPage.values()) {
    const dead = [...targets].sort();
    const page = await repo.findPage(tx, kb.id, fromSlug);
    const canRepair = fromCompiledBy !== 'user' && page !== undefined;
    if (canRepair && page) {
      await writePage(tx, kb, {
        slug: page.slug,
        title: page.title,
        content: unlink(page.content, targets),
        summary: page.summary,
        tags: page.tags,
        aliases: page.aliases,
        pageType: page.pageType,
        relationships: page.relationships.filter((r) => !targets.has(r.targetSlug)),
        sourceIds: page.sourceIds,
        compiledBy: 'compiler',
        sourceId: null,
      });
      repaired++;
    }
    findings.push({
      rule: 'broken-link',
      severity: canRepair ? 'info' : 'warning',
      message: canRepair
        ? `Unlinked ${dead.map((s) => `[[${s}]]`).join(', ')} in ${fromSlug}: no such page`
        : `${fromSlug} links to missing ${dead.join(', ')}; a person wrote it last, so it is left for them to fix`,
      pages: [fromSlug, ...dead],
      repaired: canRepair,
    });
  }

  const outline = await repo.pageOutline(tx, kb.id);
  const linkedFrom = new Map(outline.map((p) => [p.slug, p.backlinkCount]));

  for (const p of outline) {
    if ((linkedFrom.get(p.slug) ?? 0) === 0 && outline.length > 1) {
      findings.push({
        rule: 'orphan',
        severity: 'info',
        message: `No page links to ${p.slug}`,
        pages: [p.slug],
        repaired: false,
      });
    }
    if (now.getTime() - p.updatedAt.getTime() > STALE_AFTER_DAYS * 86_400_000) {
      findings.push({
        rule: 'stale',
        severity: 'info',
        message: `${p.slug} has not changed in over ${STALE_AFTER_DAYS} days`,
        pages: [p.slug],
        repaired: false,
      });
    }
    if (p.contentLength < CONSOLIDATE_BELOW_CHARS && p.backlinkCount <= 1 && outline.length > 1) {
      findings.push({
        rule: 'consolidate',
        severity: 'info',
        message: `${p.slug} is short (${p.contentLength} characters) and linked from at most one page: consider merging it`,
        pages: [p.slug],
        repaired: false,
      });
    }
  }

  for (const pair of await repo.similarTitlePairs(tx, kb.id, DUPLICATE_SIMILARITY)) {
    findings.push({
      rule: 'duplicate',
      severity: 'warning',
      message: `${pair.a} and ${pair.b} have alike titles (similarity ${pair.similarity.toFixed(2)}): the same subject?`,
      pages: [pair.a, pair.b],
      repaired: false,
    });
  }

  const index = await repo.findPage(tx, kb.id, INDEX_SLUG);
  if (index?.content !== indexMarkdown(kb.name, outline)) {
    await regenerateIndex(tx, kb);
    repaired++;
    findings.push({
      rule: 'index-drift',
      severity: 'info',
      message: index ? 'The index did not list the pages as they are: written again' : 'The index was missing: written',
      pages: [INDEX_SLUG],
      repaired: true,
    });
  }

  if (outline.length >= kb.maxPagesLimit) {
    findings.push({
      rule: 'page-limit',
      severity: 'warning',
      message: `The base holds ${outline.length} pages, its limit of ${kb.maxPagesLimit}: the compiler makes no new pages`,
      pages: [],
      repaired: false,
    });
  }

  const skipped = await repo.recentSkippedProposals(tx, kb.id);
  const skippedSlugs = [...new Set(skipped.map((l) => String(l.details.slug ?? '')).filter(Boolean))].sort();
  if (skippedSlugs.length > 0) {
    findings.push({
      rule: 'user-edit-conflict',
      severity: 'warning',
      message: `The compiler had changes for pages a person edited last; they were kept as the person wrote them (see the logs)`,
      pages: skippedSlugs,
      repaired: false,
    });
  }

  await logEvent(
    tx,
    kb.id,
    'lint',
    findings.some((f) => f.severity !== 'info') ? 'warn' : 'info',
    `Lint: ${findings.length} finding${findings.length === 1 ? '' : 's'}, ${repaired} repaired`,
    {
      findings: findings.length,
      repaired,
      rules: [...new Set(findings.map((f) => f.rule))],
      report: findings.slice(0, 50),
    },
  );
  return { findings, repaired };
}

/** The knowledge area's front door: what other areas, transports and the composition root use from it. */

export { knowledgeAgentTools, knowledgeToolGroup } from './agent-tools.ts';
export {
  getKnowledgeBase,
  KNOWLEDGE_SCOPES,
  knowledgeBaseChoices,
  knowledgeBaseNames,
  listKnowledgeBases,
  unknownKnowledgeBases,
} from './bases.service.ts';
export { knowledgeJobs } from './jobs.ts';
export { INDEX_SLUG, isSlug, slugify, wikilinkTargets } from './links.ts';
export type { KnowledgeGraph } from './pages.service.ts';
export {
  getKnowledgePage,
  knowledgeGraph,
  lintKnowledgeBase,
  listKnowledgeLogs,
  listKnowledgePages,
  listPageVersions,
  pageTitles,
  searchKnowledgePages,
} from './pages.service.ts';
export { knowledgeRoutes } from './routes.ts';
export type {
  KnowledgeBase,
  KnowledgePage,
  KnowledgePageSummary,
  KnowledgeSource,
  LintFinding,
  PageVersion,
  SearchResult,
} from './schema.ts';
export { CreateSource, MAX_SOURCE_CHARS } from './schema.ts';
export {
  createKnowledgeSource,
  deleteKnowledgeSource,
  getKnowledgeSource,
  listKnowledgeSources,
  reprocessKnowledgeSource,
} from './sources.service.ts';

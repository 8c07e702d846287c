/**
 * All SQL of the knowledge area, one file an operation. Every function is scoped by account or by a base the
 * caller already owns.
 */
export * from './bases.repo.ts';
export * from './links.repo.ts';
export * from './logs.repo.ts';
export * from './pages.repo.ts';
export * from './search.repo.ts';
export * from './sources.repo.ts';

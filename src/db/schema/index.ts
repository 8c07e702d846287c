export * from './accounts.ts';
export * from './agents.ts';
export * from './channels.ts';
export * from './connections.ts';
export * from './credits.ts';
export * from './jobs.ts';
export * from './knowledge.ts';
export * from './oauth.ts';

export * from './accounts.ts';
export * from './connections.ts';
export * from './credits.ts';
export * from './oauth.ts';

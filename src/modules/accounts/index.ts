/** The accounts area's front door: what other areas, transports and the composition root use from it. */
export { findAccountByEmail, findAccountById, insertAccount, updateAccount } from './repo.ts';
export { accountRoutes } from './routes.ts';
export { Account } from './schema.ts';
export { findAccountProfile, getAccount, toAccount } from './service.ts';

/** The accounts area's front door: what other areas, transports and the composition root use from it. */
export { accountRoutes } from './routes.ts';
export { Account } from './schema.ts';
export {
  accountIdByEmail,
  allowsWhitelabel,
  createAccount,
  findAccount,
  findAccountProfile,
  findSignIn,
  getAccount,
  setAllowWhitelabel,
  toAccount,
} from './service.ts';

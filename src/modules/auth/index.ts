/** The auth area's front door: what other areas, transports and the composition root use from it. */
export { authJobs } from './jobs.ts';
export { authRoutes } from './routes.ts';
export { CreatePat, Signup } from './schema.ts';
export {
  authenticate,
  createPat,
  getPat,
  hashPassword,
  listPats,
  logout,
  revokePat,
  signup,
} from './service.ts';

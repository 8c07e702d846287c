/** The llm area's front door: what other areas, transports and the composition root use from it. */
export { clientGone, llmRoutes } from './routes.ts';
export type { Billing, Credits } from './service.ts';
export { listModels, resolveModel, runCompletion } from './service.ts';

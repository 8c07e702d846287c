/** The sandbox area's front door: what other areas, transports and the composition root use from it. */
export { runBilled } from './service.ts';
export { executeCodeToolGroup, executeCodeTools } from './tools.ts';

/** The sandbox area's front door: what other areas, transports and the composition root use from it. */

export { executeCodeToolGroup, executeCodeTools } from './agent-tools.ts';
export { runBilled } from './service.ts';

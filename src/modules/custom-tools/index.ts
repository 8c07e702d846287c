/** The tools area's front door: what other areas, transports and the composition root use from it. */

export type { Billed } from './generate.ts';
export { askForJson } from './generate.ts';
export { toolJobs } from './jobs.ts';
export {
  linkedAgentTools,
  linkedToolGroup,
  linksOfTool,
  linkTool,
  unlinkTool,
  updateToolSecrets,
} from './links.service.ts';
export { toolRoutes } from './routes.ts';
export type { AgentToolLink, Tool, ToolRun } from './schema.ts';
export { CreateTool, TOOL_LANGUAGES, UpdateTool } from './schema.ts';
export { createTool, deleteTool, getTool, listTools, testTool, updateTool } from './service.ts';
export { findTestRun, keepTestRun } from './test-runs.service.ts';

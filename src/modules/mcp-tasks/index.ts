/** The mcp-tasks area's front door: MCP tasks (long tool calls the client polls), stored for the MCP server. */
export { mcpJobs } from './jobs.ts';
export { callerTaskStore, runTask } from './service.ts';

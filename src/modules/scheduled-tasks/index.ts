/** The scheduled-tasks area's front door: what other areas, transports and the composition root use from it. */

export { taskToolGroup, taskTools } from './agent-tools.ts';
export { taskJobs } from './jobs.ts';
export { scheduledTaskRoutes } from './routes.ts';
export type { Task, TaskRun } from './schema.ts';
export { CreateTask, UpdateTask } from './schema.ts';
export {
  createTask,
  deleteTask,
  getAccountTask,
  listAccountTasks,
  listRuns,
  previewSchedule,
  runTaskNow,
  taskAgentDeletion,
  updateTask,
} from './service.ts';

/** The skills area's front door: what other areas, transports and the composition root use from it. */
export { skillRoutes } from './routes.ts';
export type { Skill } from './schema.ts';
export { CreateSkill, UpdateSkill } from './schema.ts';
export {
  agentIdsOfSkill,
  createSkill,
  deleteSkill,
  getSkill,
  linkSkill,
  listSkills,
  skillIndexFor,
  skillToolGroup,
  skillTools,
  unlinkSkill,
  updateSkill,
} from './service.ts';

import { z } from 'zod';
import { Timestamp } from '../../lib/pagination.ts';

/** SPEC §2 Skill (a reusable prompt) and the agent-skill link. */

/** The longest skill prompt (characters). */
export const SKILL_PROMPT_MAX_CHARS = 50_000;

const fields = {
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .meta({ examples: ['Weekly report'] }),
  description: z
    .string()
    .max(1000)
    .describe('one line: the agent reads it in its skill index to decide when to load')
    .meta({ examples: ["Writes the Monday status report from the week's closed issues"] }),
  prompt: z
    .string()
    .min(1)
    .max(SKILL_PROMPT_MAX_CHARS)
    .describe('the full instructions the agent loads')
    .meta({
      examples: [
        'List the issues closed last week with github_list_issues, group them by label, and write a five-line summary with links.',
      ],
    }),
};

export const CreateSkill = z
  .object({ name: fields.name, description: fields.description.default(''), prompt: fields.prompt })
  .strict();
export type CreateSkill = z.infer<typeof CreateSkill>;

export const UpdateSkill = z
  .object({
    name: fields.name.optional(),
    description: fields.description.optional(),
    prompt: fields.prompt.optional(),
  })
  .strict();
export type UpdateSkill = z.infer<typeof UpdateSkill>;

export const Skill = z
  .object({
    id: z.string().meta({ examples: ['skl_Zq3v9dH2TQm0bq1yWzY8cA'] }),
    accountId: z.string(),
    name: z.string(),
    description: z.string(),
    prompt: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Skill' });
export type Skill = z.infer<typeof Skill>;

export const SkillParams = z.object({ skillId: z.string().min(1).max(100) });
export const AgentSkillParams = z.object({
  agentId: z.string().min(1).max(100),
  skillId: z.string().min(1).max(100),
});

export const GeneratePrompt = z
  .object({
    description: z
      .string()
      .trim()
      .min(1)
      .max(4000)
      .describe('what the skill should make the agent do')
      .meta({ examples: ['Write a weekly status report from my closed GitHub issues'] }),
  })
  .strict();
export const GeneratedPrompt = z
  .object({ name: z.string(), description: z.string(), prompt: z.string() })
  .meta({ id: 'GeneratedSkillPrompt' });
export type GeneratedPrompt = z.infer<typeof GeneratedPrompt>;

export const LinkSkill = z
  .object({
    skillId: z
      .string()
      .min(1)
      .max(100)
      .meta({ examples: ['skl_5kY0bq9xTnq1y8Wv3mDgZA'] }),
  })
  .strict();

export const SkillSummary = z
  .object({ id: z.string(), name: z.string(), description: z.string() })
  .meta({ id: 'SkillSummary' });
export type SkillSummary = z.infer<typeof SkillSummary>;

export const AgentSkillLink = z
  .object({ agentId: z.string(), skillId: z.string(), skill: SkillSummary, createdAt: Timestamp })
  .meta({ id: 'AgentSkillLink' });
export type AgentSkillLink = z.infer<typeof AgentSkillLink>;

import { index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { accounts } from './accounts.ts';
import { agents } from './agents.ts';
import { ts } from './columns.ts';

/** SPEC §2 Custom tool: code run in the sandbox with JSON-Schema arguments and named secrets. */
export const customTools = pgTable(
  'custom_tools',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    code: text('code').notNull(),
    language: text('language').notNull(),
    parameters: jsonb('parameters').$type<Record<string, unknown>>().notNull(),
    requiredSecrets: text('required_secrets').array().notNull(),
    /** The run's wall-clock limit; null: the sandbox's default. */
    timeoutMs: integer('timeout_ms'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('custom_tools_account_name_idx').on(t.accountId, t.name),
    index('custom_tools_account_created_idx').on(t.accountId, t.createdAt),
  ],
);

/** SPEC §2 Skill: a reusable prompt an agent loads when it needs it. */
export const skills = pgTable(
  'skills',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    prompt: text('prompt').notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('skills_account_name_idx').on(t.accountId, t.name),
    index('skills_account_created_idx').on(t.accountId, t.createdAt),
  ],
);

/**
 * A tool linked to an agent, with the link's own secret values: one JSON map sealed with the key ring (the
 * agent and tool ids bound as associated data, so a ciphertext copied to another link does not open). The
 * names of the secrets set are kept beside it in the clear, so listings never open the ciphertext.
 */
export const agentTools = pgTable(
  'agent_tools',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    toolId: text('tool_id')
      .notNull()
      .references(() => customTools.id, { onDelete: 'cascade' }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    secretsEnc: text('secrets_enc'),
    secretNames: text('secret_names').array().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.toolId] }), index('agent_tools_tool_idx').on(t.toolId)],
);

/** A skill linked to an agent. */
export const agentSkills = pgTable(
  'agent_skills',
  {
    agentId: text('agent_id')
      .notNull()
      .references(() => agents.id, { onDelete: 'cascade' }),
    skillId: text('skill_id')
      .notNull()
      .references(() => skills.id, { onDelete: 'cascade' }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.skillId] }), index('agent_skills_skill_idx').on(t.skillId)],
);

export type CustomToolRow = typeof customTools.$inferSelect;
export type SkillRow = typeof skills.$inferSelect;
export type AgentToolRow = typeof agentTools.$inferSelect;
export type AgentSkillRow = typeof agentSkills.$inferSelect;

/**
 * A test run's result, kept for the page the test form redirects to (which another instance may serve). The
 * id is the SHA-256 of the key in the page's URL; the run and its arguments are sealed with the key ring (the id
 * bound), since a tool may print the secrets it was given. `tools.sweep-test-runs` deletes expired rows.
 */
export const toolTestRuns = pgTable(
  'tool_test_runs',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    toolId: text('tool_id')
      .notNull()
      .references(() => customTools.id, { onDelete: 'cascade' }),
    runEnc: text('run_enc').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('tool_test_runs_expires_idx').on(t.expiresAt), index('tool_test_runs_tool_idx').on(t.toolId)],
);

import type { Config } from '../../config.ts';
import { isProviderConfigured, providerCatalog } from '../providers/index.ts';

/** Something a fresh install lacks, what it stops and the settings that give it. */
export interface SetupNotice {
  /** One line, for the start-up log and a page's heading. */
  title: string;
  /** What to set, and where to read more. */
  how: string;
}

/**
 * What this set-up cannot do yet for want of an operator's setting: said once at start-up (a warning each) and on
 * the home and account pages, so a new user learns why chat stays silent before trying it.
 */
export function setupNotices(config: Pick<Config, 'baseUrl' | 'llm' | 'providers'>): SetupNotice[] {
  const notices: SetupNotice[] = [];
  const { llm } = config;
  if (!llm.custom && !llm.openai && !llm.anthropic) {
    notices.push({
      title: 'No LLM upstream is set: agent chat, the LLM gateway, scheduled tasks and knowledge compilation need one.',
      how:
        'Set OPENAI_API_KEY, ANTHROPIC_API_KEY, or LLM_BASE_URL for any OpenAI-compatible server ' +
        '(Ollama: LLM_BASE_URL=http://localhost:11434/v1), then restart the service.',
    });
  }
  const oauth = providerCatalog(config).providers.filter((p) => p.definition.authType === 'oauth');
  const unconfigured = oauth.filter((p) => !isProviderConfigured(config, p.definition.id));
  if (unconfigured.length > 0) {
    const example = unconfigured[0]?.definition.id ?? 'github';
    const prefix = `PROVIDER_${example.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
    // Those taking a token the user holds (apiKey) connect without operator credentials.
    const blocked = unconfigured.filter((p) => !p.definition.apiKey).length;
    const byToken = `${unconfigured.length - blocked} of them connect with a token the user pastes instead`;
    notices.push({
      title:
        unconfigured.length === oauth.length
          ? `No OAuth provider has operator credentials: ${blocked} of the ${oauth.length} providers cannot be connected yet (${byToken}).`
          : `${unconfigured.length} of ${oauth.length} OAuth providers have no operator credentials (${byToken}).`,
      how:
        `Register an OAuth app with the provider (redirect URI: ${config.baseUrl}/api/v1/connections/callback) and set ` +
        `its ${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET, then restart the service.`,
    });
  }
  return notices;
}

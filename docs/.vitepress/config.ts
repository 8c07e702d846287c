import { defineConfig } from 'vitepress';
import { withMermaid } from 'vitepress-plugin-mermaid';

/**
 * The documentation site: `npm run docs` previews it, `npm run docs:build` writes it to docs/.vitepress/dist,
 * which the service serves at /guide/ when it exists (src/http/guide.ts). A dead link fails the build.
 */
export const SIDEBAR = [
  {
    text: 'Start',
    items: [
      { text: 'Overview', link: '/' },
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Concepts', link: '/concepts' },
    ],
  },
  {
    text: 'Use it',
    items: [
      { text: 'MCP endpoint and clients', link: '/mcp' },
      { text: 'MCP client metadata documents', link: '/mcp-client-metadata' },
      { text: 'LLM gateway', link: '/llm-gateway' },
      { text: 'Anthropic Messages API', link: '/anthropic-messages' },
      { text: 'Embeddings', link: '/embeddings' },
      { text: 'Agents and conversations', link: '/agents' },
      { text: 'Tools, skills and the sandbox', link: '/tools' },
      { text: 'Scheduled tasks', link: '/scheduled-tasks' },
      { text: 'Knowledge bases', link: '/knowledge' },
      { text: 'Messaging channels', link: '/channels' },
      { text: 'Providers and connections', link: '/providers' },
      { text: 'Activity log', link: '/activity' },
      { text: 'Webhooks', link: '/webhooks' },
      { text: 'Tool search', link: '/tool-search' },
      { text: 'OAuth apps and sign-in', link: '/oauth-apps' },
      { text: 'Typed TypeScript client', link: '/typed-client' },
    ],
  },
  {
    text: 'Run it',
    items: [
      { text: 'Self-hosting', link: '/self-hosting' },
      { text: 'Production', link: '/production' },
      { text: 'Tracing', link: '/tracing' },
      { text: 'Security model', link: '/security' },
      { text: 'Configuration', link: '/configuration' },
      { text: 'Command line', link: '/cli' },
      { text: 'API reference', link: '/api' },
    ],
  },
  {
    text: 'Measure and change it',
    items: [
      { text: 'Benchmarks', link: '/benchmarks' },
      { text: 'Gateway speed log', link: '/gateway-speed' },
      { text: 'Contributing and architecture', link: '/contributing' },
      { text: 'Architecture: parts and arrows', link: '/architecture' },
    ],
  },
];

export default withMermaid(
  defineConfig({
    title: 'Switchboard',
    description: 'The connector platform for AI applications: one MCP endpoint, an LLM gateway, agents.',
    base: '/guide/',
    cleanUrls: false,
    lastUpdated: false,
    srcExclude: ['_incoming/**'],
    markdown: {
      // Inline code is shown as written: `{{name}}` (provider templates) is not a Vue interpolation.
      config(md) {
        const render = md.renderer.rules.code_inline;
        md.renderer.rules.code_inline = (tokens, idx, options, env, self) => {
          tokens[idx]?.attrSet('v-pre', '');
          return render ? render(tokens, idx, options, env, self) : self.renderToken(tokens, idx, options);
        };
      },
    },
    themeConfig: {
      nav: [
        { text: 'Getting started', link: '/getting-started' },
        { text: 'Configuration', link: '/configuration' },
        { text: 'API reference', link: '/api' },
      ],
      sidebar: SIDEBAR,
      search: { provider: 'local' },
      outline: { level: [2, 3] },
    },
  }),
);

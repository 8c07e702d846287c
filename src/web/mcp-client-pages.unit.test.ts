import { describe, expect, it } from 'vitest';
import { type McpClientConfig, mcpClientConfigs, TOKEN_PLACEHOLDER } from './mcp-client-pages.ts';

/** A POSIX shell's words of one simple command (quotes and backslashes), enough to read the snippet back. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '\\') {
      word += line[++i] ?? '';
      inWord = true;
    } else if (c === ' ') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

function byId(url: string, token?: string): Record<McpClientConfig['id'], McpClientConfig> {
  const configs = mcpClientConfigs(url, token);
  const find = (id: McpClientConfig['id']) => {
    const found = configs.find((c) => c.id === id);
    if (!found) throw new Error(`no ${id} configuration`);
    return found;
  };
  return {
    'claude-desktop': find('claude-desktop'),
    'claude-code': find('claude-code'),
    cursor: find('cursor'),
    vscode: find('vscode'),
    windsurf: find('windsurf'),
  };
}

describe('MCP client configurations', () => {
  it("each parses and says what its client's documentation asks for, with this server's URL and the token", () => {
    const c = byId('https://sb.example.com/mcp', 'pat_abc123');
    expect(JSON.parse(c['claude-desktop'].text)).toEqual({
      mcpServers: {
        switchboard: {
          command: 'npx',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp-remote substitutes it, not JavaScript
          args: ['-y', 'mcp-remote', 'https://sb.example.com/mcp', '--header', 'Authorization:${SWITCHBOARD_AUTH}'],
          env: { SWITCHBOARD_AUTH: 'Bearer pat_abc123' },
        },
      },
    });
    expect(shellWords(c['claude-code'].text)).toEqual([
      'claude',
      'mcp',
      'add',
      '--transport',
      'http',
      'switchboard',
      'https://sb.example.com/mcp',
      '--header',
      'Authorization: Bearer pat_abc123',
    ]);
    expect(JSON.parse(c.cursor.text)).toEqual({
      mcpServers: {
        switchboard: { url: 'https://sb.example.com/mcp', headers: { Authorization: 'Bearer pat_abc123' } },
      },
    });
    // VS Code asks for the token itself and keeps it in its secret storage: the file holds none.
    expect(JSON.parse(c.vscode.text)).toEqual({
      servers: {
        switchboard: {
          type: 'http',
          url: 'https://sb.example.com/mcp',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: VS Code substitutes it, not JavaScript
          headers: { Authorization: 'Bearer ${input:switchboard-token}' },
        },
      },
      inputs: [
        { type: 'promptString', id: 'switchboard-token', description: 'Switchboard access token', password: true },
      ],
    });
    expect(c.vscode.text).not.toContain('pat_abc123');
    expect(JSON.parse(c.windsurf.text)).toEqual({
      mcpServers: {
        switchboard: { serverUrl: 'https://sb.example.com/mcp', headers: { Authorization: 'Bearer pat_abc123' } },
      },
    });
  });

  it('without a token they hold the placeholder; mcp-remote is allowed plain http off loopback only', () => {
    const local = byId('http://localhost:8080/mcp');
    expect(JSON.parse(local.cursor.text).mcpServers.switchboard.headers.Authorization).toBe(
      `Bearer ${TOKEN_PLACEHOLDER}`,
    );
    expect(JSON.parse(local['claude-desktop'].text).mcpServers.switchboard.args).not.toContain('--allow-http');
    const lan = byId('http://192.168.1.5:8080/mcp');
    expect(JSON.parse(lan['claude-desktop'].text).mcpServers.switchboard.args.at(-1)).toBe('--allow-http');
  });

  it("a URL with shell characters stays one word in Claude Code's command", () => {
    const c = byId("https://sb.example.com/it's here/mcp", 'pat_x');
    expect(shellWords(c['claude-code'].text)[6]).toBe("https://sb.example.com/it's here/mcp");
  });
});

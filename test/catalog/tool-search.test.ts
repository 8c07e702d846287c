import { describe, expect, it } from 'vitest';
import { catalogAgentTools, TOOL_SEARCH_SET, topFiveRate } from '../../bench/tool-search.ts';
import { searchTools } from '../../src/agent/tool-group.ts';

/**
 * The agent finds the right tool among every tool of the catalog: on the labelled requests of
 * test/fixtures/tool-search-set.json the expected tool is in the search's top 5 (figures in README; the floor
 * here is what they were when measured, so a change to the catalog or the search that loses ground fails).
 */
describe('tool search over the whole catalog', () => {
  const tools = catalogAgentTools();

  it('has a labelled set of at least 100 requests naming real tools, with a held-out part', () => {
    const names = new Set(tools.map((t) => t.name));
    const all = [...TOOL_SEARCH_SET.tune, ...TOOL_SEARCH_SET.heldOut];
    expect(all.length).toBeGreaterThanOrEqual(100);
    expect(TOOL_SEARCH_SET.heldOut.length).toBeGreaterThanOrEqual(40);
    for (const [, expected] of all) expect(names.has(expected), expected).toBe(true);
  });

  it('puts the expected tool in the top 5 for at least 95% of the tuned part and 37 of the 40 held-out', () => {
    const tune = topFiveRate(tools, TOOL_SEARCH_SET.tune);
    const held = topFiveRate(tools, TOOL_SEARCH_SET.heldOut);
    expect(tune.hits / TOOL_SEARCH_SET.tune.length, tune.misses.join('\n')).toBeGreaterThanOrEqual(0.95);
    // 37 of 40 since the search became BM25F with providers ranked too (issue 41 item 3): one request fewer than
    // before on this older set, against 87.2% -> 91.2% top-3 on the larger held-out set of tool-search-eval.test.
    expect(held.hits).toBeGreaterThanOrEqual(37);
  });

  it('prefers the provider a request names', () => {
    expect(searchTools(tools, 'create a task in microsoft to do', 3)[0]?.name).toBe('microsoft_todo_create_task');
    // The provider named comes first; which of its two create tools (a tie lexically) the vectors put first is
    // not this test's point: create_task_list since the tool search's ranker re-orders the first thirty.
    const googleTasks = searchTools(tools, 'create a task in google tasks', 3);
    expect(googleTasks.map((t) => t.source)).toEqual(['google-tasks', 'google-tasks', 'google-tasks']);
    expect(googleTasks.map((t) => t.name)).toContain('google_tasks_create_task');
    expect(searchTools(tools, 'list meetings', 5).map((t) => t.source)).toContain('zoom');
  });

  it('reads quoted text as what to write, a weekday after "on" or "for" as a day, and more verbs', () => {
    // The quoted words would otherwise find LaunchDarkly ("launched").
    expect(searchTools(tools, "tweet 'we just launched!'", 3)[0]?.name).toBe('x_create_post');
    // "for monday" is a day, not monday.com; "the monday board" names it.
    expect(searchTools(tools, "what's on my agenda for monday", 3).map((t) => t.source)).not.toContain('monday');
    expect(searchTools(tools, 'add an item to the monday board', 3)[0]?.name).toBe('monday_create_item');
    expect(searchTools(tools, 'assign the asana task to Lee', 3)[0]?.name).toBe('asana_update_task');
    expect(searchTools(tools, 'duplicate the sheet tab', 3)[0]?.name).toBe('google_sheets_copy_sheet_to');
  });

  it('knows everyday verbs and phrasal verbs (spin up, ack, kill)', () => {
    expect(searchTools(tools, 'spin up a droplet in frankfurt', 3).map((t) => t.name)).toContain(
      'digitalocean_create_droplet',
    );
    expect(searchTools(tools, 'ack the opsgenie alert about disk space', 3).map((t) => t.name)).toContain(
      'opsgenie_acknowledge_alert',
    );
    expect(searchTools(tools, 'kill the running github workflow', 3).map((t) => t.name)).toContain(
      'github_cancel_workflow_run',
    );
  });

  it('reads who reports to someone, pulling up, opening an issue (a new one too) or a merge request, an r/name and convos', () => {
    const top3 = (q: string) => searchTools(tools, q, 3).map((t) => t.name);
    // Whom Sam reports to is Sam's manager; who reports to Sam, Sam's direct reports.
    expect(top3('who does Sam Ortiz report to')[0]).toBe('microsoft_entra_get_manager');
    expect(top3('who reports to Sam Ortiz')[0]).toBe('microsoft_entra_list_direct_reports');
    // To pull something up is to show it, not to create it.
    expect(top3('pull up Marco Diaz in salesforce')[0]).toBe('salesforce_sosl_search');
    expect(top3("pull up last month's invoices in quickbooks")).not.toContain('quickbooks_create_invoice');
    // To open an issue is to create one, not to search them.
    expect(top3('open an issue in octo/app about the login crash')[0]).toMatch(/_create_issue$/);
    expect(top3('open a new ticket in zendesk for the refund')[0]).toBe('zendesk_create_ticket');
    expect(top3('open a new bug about the crash in linear')[0]).toBe('linear_create_issue');
    // GitLab's pull requests are merge requests; open ones are a list, opening one creates it.
    expect(top3('open a new pull request in gitlab')[0]).toBe('gitlab_create_merge_request');
    expect(top3('open an MR for the cache-fix branch in gitlab')[0]).toBe('gitlab_create_merge_request');
    expect(top3('open merge requests on group/mobile in gitlab')[0]).toBe('gitlab_list_merge_requests');
    // "merge" before "requests" names a thing, not an ask to merge.
    expect(top3('merge requests assigned to me in gitlab')[0]).toBe('gitlab_list_merge_requests');
    expect(top3('top posts on r/selfhosted this week').every((n) => n.startsWith('reddit_'))).toBe(true);
    expect(top3('unassigned intercom convos')[0]).toMatch(/^intercom_(list|search)_conversations$/);
  });
});

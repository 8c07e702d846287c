import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { scheduledTasks } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { taskJobs } from '../../src/modules/scheduled-tasks/jobs.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser, type TestHarness } from '../harness.ts';
import { runQueuedJobs } from '../jobs.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, suiteBrowser, type TestBrowser } from './browser.ts';

/**
 * A person on the scheduled tasks page in a real browser: previews a schedule (in words, the next five runs in
 * the chosen zone), sees a bad one refused, creates the task, pauses and enables it, runs it now and reads the
 * run in its history, deletes it; another account's task is a 404 page.
 */
describe.skipIf(!runBrowser)('scheduled tasks page in a real browser (chromium)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ h, llm, app, base, browser } = s), { viewport: { width: 900, height: 1100 } });

  it('previews, creates, pauses, enables, runs now with history, and deletes a task', async () => {
    const user = await createUser(app);
    const page = await browser.newPage();
    await page.goto(`${base}/account/tasks`);
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Scheduled tasks', exact: true }).waitFor();
    expect(await page.getByText('make an agent first').isVisible()).toBe(true);
    await call(app, 'POST', '/api/v1/agents', { token: user.sessionToken, body: { name: 'Planner' } });
    await page.reload();

    await page.getByLabel('Name').fill('Monday digest');
    await page.getByLabel('Prompt').fill('Summarize my week.');
    await page.getByLabel(/^Schedule/).fill('0 25 * * 1');
    await page.getByLabel('Time zone').fill('Europe/Paris');
    const refused = page.waitForResponse((r) => r.url().endsWith('/account/tasks/preview'));
    await page.getByRole('button', { name: 'Preview schedule' }).click();
    expect((await refused).status()).toBe(422);
    expect(await page.getByRole('alert').textContent()).toBe('cronExpression: the hour field "25" is not valid');
    // What was typed is kept.
    expect(await page.getByLabel('Name').inputValue()).toBe('Monday digest');

    await page.getByLabel(/^Schedule/).fill('0 9 * * 1');
    await page.getByRole('button', { name: 'Preview schedule' }).click();
    await page.getByRole('heading', { name: 'At 09:00, only on Monday' }).waitFor();
    const runs = await page.locator('.preview li time').allTextContents();
    expect(runs).toHaveLength(5);
    for (const run of runs) expect(run).toMatch(/^Mon, .*09:00 CES?T$/);
    expect(await page.getByLabel('Time zone').inputValue()).toBe('Europe/Paris');
    expect(
      await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.accountId, user.account.id)),
    ).toEqual([]);
    await keepScreenshot(page, 'tasks-preview', { fullPage: true });

    await page.getByRole('button', { name: 'Create task' }).click();
    await page.getByText('Task created.').waitFor();
    const item = page.locator('li[data-task]');
    expect(await item.textContent()).toContain('At 09:00, only on Monday');
    expect(await item.textContent()).toContain('Agent: Planner');
    expect(await item.locator('.badge').first().textContent()).toBe('enabled');

    await page.getByRole('button', { name: 'Pause Monday digest' }).click();
    await page.getByText('Task paused').waitFor();
    expect(await item.textContent()).toContain('Next run: none');
    const [paused] = await h.database.db
      .select()
      .from(scheduledTasks)
      .where(eq(scheduledTasks.accountId, user.account.id));
    expect(paused).toMatchObject({ enabled: false, nextRunAt: null });
    await page.getByRole('button', { name: 'Enable Monday digest' }).click();
    await page.getByText('Task enabled.').waitFor();
    expect(await item.textContent()).toMatch(/Next run: Mon, .*09:00 CES?T/);

    await page.getByRole('button', { name: 'Run now Monday digest' }).click();
    await page.getByText('Run queued').waitFor();
    await page.getByRole('heading', { name: 'Monday digest', level: 1 }).waitFor();
    llm.enqueue({ content: 'Quiet week: **two** meetings.' });
    expect(await runQueuedJobs(app, taskJobs, 'tasks.run', { accountId: user.account.id })).toHaveLength(1);
    await page.reload();
    const row = page.locator('tr[data-run]');
    expect(await row.locator('.badge').textContent()).toBe('succeeded');
    expect(await row.textContent()).toContain('Quiet week');
    expect(await row.textContent()).toContain('manual');
    await keepScreenshot(page, 'tasks-history', { fullPage: true });
    await row.getByRole('link', { name: 'Conversation' }).click();
    await page.getByRole('heading', { name: 'Planner', level: 1 }).waitFor();
    expect(await page.locator('ol.chat li.user').textContent()).toContain('Summarize my week.');

    await page.goto(`${base}/account/tasks`);
    await page.getByRole('button', { name: 'Delete Monday digest' }).click();
    await page.getByText('Task deleted.').waitFor();
    expect(await page.getByText('No tasks yet').isVisible()).toBe(true);

    // Another account's task is a 404 page, and its buttons do nothing to it.
    const other = await createUser(app);
    const agent = (
      await call(app, 'POST', '/api/v1/agents', { token: other.sessionToken, body: { name: 'x' } })
    ).json();
    const theirs = (
      await call(app, 'POST', `/api/v1/agents/${agent.id}/scheduled-tasks`, {
        token: other.sessionToken,
        body: { name: 'theirs', prompt: 'p', cronExpression: '0 9 * * 1' },
      })
    ).json().id as string;
    const res = await page.goto(`${base}/account/tasks/${theirs}`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole('alert').textContent()).toBe(`Scheduled task ${theirs} not found`);

    // A phone-sized screen shows the list without sideways scrolling.
    const phone = await browser.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}/account/tasks`);
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await keepScreenshot(phone, 'tasks-phone', { fullPage: true });
  });

  describe('in a browser whose clock is in Tokyo', () => {
    let tokyo: TestBrowser;
    suiteBrowser((b) => (tokyo = b), { width: 390, height: 844 }, { timezoneId: 'Asia/Tokyo' });

    it("a new task starts in the browser's zone; a task is edited on its page; a bad edit keeps the form", async () => {
      const user = await createUser(app);
      await call(app, 'POST', '/api/v1/agents', { token: user.sessionToken, body: { name: 'Briefer' } });
      const page = await tokyo.newPage();
      await page.goto(`${base}/account/tasks`);
      await submitSignIn(page, user);
      await page.getByRole('heading', { name: 'Scheduled tasks', exact: true }).waitFor();
      // The page's script sets the zone once it runs, which may be after the heading shows.
      await expect.poll(() => page.getByLabel('Time zone').inputValue(), { timeout: 5000 }).toBe('Asia/Tokyo');
      await page.getByLabel('Name').fill('Morning brief');
      await page.getByLabel('Prompt').fill('What is on today?');
      await page.getByLabel(/^Schedule/).fill('0 8 * * *');
      await page.getByRole('button', { name: 'Create task' }).click();
      await page.getByText('Task created.').waitFor();
      const [row] = await h.database.db
        .select()
        .from(scheduledTasks)
        .where(eq(scheduledTasks.accountId, user.account.id));
      expect(row).toMatchObject({ name: 'Morning brief', cronExpression: '0 8 * * *', timezone: 'Asia/Tokyo' });

      await page.getByRole('link', { name: 'Morning brief' }).click();
      await page.getByRole('heading', { name: 'Edit task' }).waitFor();
      // The edit form holds the task as it is, its zone included (not the browser's).
      expect(await page.getByLabel('Time zone').inputValue()).toBe('Asia/Tokyo');
      await page.getByLabel(/^Schedule/).fill('0 31 * * *');
      await page.getByLabel('Name').fill('Daily brief');
      const refused = page.waitForResponse((r) => r.request().method() === 'POST');
      await page.getByRole('button', { name: 'Save task' }).click();
      expect((await refused).status()).toBe(422);
      expect(await page.getByRole('alert').textContent()).toBe('cronExpression: the hour field "31" is not valid');
      expect(await page.getByLabel('Name').inputValue()).toBe('Daily brief');

      await page.getByLabel(/^Schedule/).fill('30 7 * * 1-5');
      await page.getByLabel('Time zone').fill('Europe/Paris');
      await page.getByRole('button', { name: 'Save task' }).click();
      await page.getByText('Task saved.').waitFor();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Daily brief');
      const [saved] = await h.database.db
        .select()
        .from(scheduledTasks)
        .where(eq(scheduledTasks.accountId, user.account.id));
      expect(saved).toMatchObject({
        name: 'Daily brief',
        prompt: 'What is on today?',
        cronExpression: '30 7 * * 1-5',
        timezone: 'Europe/Paris',
      });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      await keepScreenshot(page, 'task-edit-phone', { fullPage: true });

      // Another account's task cannot be edited: 404, and it stays as it was.
      const other = await createUser(app);
      const otherAgent = (
        await call(app, 'POST', '/api/v1/agents', { token: other.sessionToken, body: { name: 'Theirs' } })
      ).json().id as string;
      const theirs = (
        await call(app, 'POST', `/api/v1/agents/${otherAgent}/scheduled-tasks`, {
          token: other.sessionToken,
          body: { name: 'theirs', prompt: 'p', cronExpression: '0 9 * * 1' },
        })
      ).json().id as string;
      const csrf = await page.locator('input[name="csrf"]').first().inputValue();
      const refusedEdit = await tokyo.context.request.post(`${base}/account/tasks/${theirs}`, {
        form: { csrf, name: 'mine', prompt: 'x', cronExpression: '0 9 * * *', timezone: 'UTC' },
        headers: { origin: base },
      });
      const status = refusedEdit.status();
      expect(theirs).toMatch(/^task_/);
      expect(status).toBe(404);
      const [untouched] = await h.database.db.select().from(scheduledTasks).where(eq(scheduledTasks.id, theirs));
      expect(untouched?.name).toBe('theirs');
    });
  });
});

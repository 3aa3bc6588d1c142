// judge serve's dashboard in headless Chromium, driven by playwright-core.
//
// Started by judge-client/tests/serve_browser.rs, which runs the real agent-server and judge
// binaries, writes the runs this script expects, starts `judge serve --auth-token` and passes:
//
//   DASHBOARD_URL    judge serve's base URL (http://127.0.0.1:PORT)
//   DASHBOARD_TOKEN  its --auth-token
//   AGENT_URL        agent-server, the target of the simulation started here
//   HANG_URL         an endpoint that accepts connections and never answers (the injected agent)
//   LTM_A, LTM_B     two LTM runs (memory on, then memory off: B regresses)
//   APPS_RUN         a `judge apps` run
//   SCREENSHOTS      folder for the screenshots of the main pages
//   CHROMIUM         the browser binary (default /usr/bin/chromium)
//
// Every step is a user's: pages are loaded through the address bar, links and buttons clicked,
// forms filled. It exits non-zero at the first failed check, saying which and where.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

function need(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (this script is run by judge-client/tests/serve_browser.rs)`);
  return value;
}
const base = need("DASHBOARD_URL");
const token = need("DASHBOARD_TOKEN");
const agentUrl = need("AGENT_URL");
const hangUrl = need("HANG_URL");
const [ltmA, ltmB, appsRun] = [need("LTM_A"), need("LTM_B"), need("APPS_RUN")];
const shots = need("SCREENSHOTS");
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
context.setDefaultTimeout(20_000);
const page = await context.newPage();
const consoleErrors = [];
page.on("pageerror", (e) => consoleErrors.push(String(e)));

let current = "start";
async function step(name, body) {
  current = name;
  const started = Date.now();
  await body();
  console.log(`ok  ${name} (${Date.now() - started} ms)`);
}
async function shot(name) {
  // The top of each page at the viewport's width: what a reader sees first, at a sane size.
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });
}
const text = async (locator) => (await locator.innerText()).trim();

try {
  await step("without a token the page asks for one and the API says 401", async () => {
    await page.goto(`${base}/`);
    await page.getByRole("heading", { name: "Access token needed", exact: true }).waitFor();
    assert.match(await text(page.locator("#token-message")), /requires an access token/);
    const status = await page.evaluate(() => fetch("/runs").then((r) => r.status));
    assert.equal(status, 401);
    const events = await page.evaluate(() => fetch("/simulations/x/events").then((r) => r.status));
    assert.equal(events, 401, "the event stream needs the token too");
    await shot("token");
  });

  await step("a wrong token is refused, the right one shows the runs", async () => {
    await page.getByRole("textbox", { name: "Access token" }).fill("not-the-token");
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByText("The token given was refused.").waitFor();
    await page.getByRole("textbox", { name: "Access token" }).fill(token);
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByRole("heading", { name: "Runs", exact: true }).waitFor();
    await page.getByRole("button", { name: "Forget token" }).waitFor();
  });

  await step("the token from the URL fragment is taken once and leaves the address bar", async () => {
    const other = await context.newPage();
    await other.goto(`${base}/#token=${encodeURIComponent(token)}&/simulations`);
    await other.getByRole("heading", { name: "Simulations", exact: true }).waitFor();
    assert.equal(new URL(other.url()).hash, "#/simulations");
    assert.ok(!other.url().includes(token), other.url());
    assert.equal(await other.evaluate(() => sessionStorage.getItem("agentwall-judge-token")), token);
    await other.close();
  });

  await step("runs list: every run with its score, a trend per suite", async () => {
    await page.goto(`${base}/#/`);
    const runs = page.getByRole("table", { name: "Runs" });
    for (const id of [ltmA, ltmB, appsRun]) {
      const row = runs.locator(`tr[data-run="${id}"]`);
      await row.waitFor();
      assert.match(await text(row), /\d+\.\d%/, `${id} has no score: ${await text(row)}`);
    }
    const trend = page.getByRole("region", { name: "ltm trend" });
    assert.equal(await trend.locator("circle").count(), 2, "one point per LTM run");
    assert.match(await trend.getByRole("img").getAttribute("aria-label"), /ltm trend: 2 runs, latest \d/);
    // B (memory off) is newer and worse: its row says so.
    assert.match(await text(runs.locator(`tr[data-run="${ltmB}"]`)), /▼/);
    await shot("runs");
  });

  await step("LTM run page: headline score, chart, one row per test", async () => {
    await page.getByRole("link", { name: ltmA, exact: true }).click();
    await page.getByRole("heading", { name: `Run ${ltmA}`, exact: true }).waitFor();
    assert.match(await text(page.locator("#score")), /\d+\.\d%/);
    await page.getByRole("img", { name: "Mean score per test type" }).waitFor();
    const tests = page.getByRole("table", { name: "Tests" }).locator("tbody tr");
    assert.ok((await tests.count()) >= 4, `tests: ${await tests.count()}`);
    assert.ok(await page.getByRole("table", { name: "Tests" }).getByText("passed").count() > 0);
    await shot("ltm-run");
  });

  await step("compare two runs side by side: B regresses against A", async () => {
    await page.goto(`${base}/#/`);
    await page.getByLabel("Run A").selectOption(ltmA);
    await page.getByLabel("Run B").selectOption(ltmB);
    await page.getByRole("button", { name: "Compare" }).click();
    await page.getByRole("heading", { name: "Comparison", exact: true }).waitFor();
    const a = page.getByRole("region", { name: "Run A" });
    const b = page.getByRole("region", { name: "Run B" });
    assert.ok((await text(a)).includes(ltmA) && (await text(b)).includes(ltmB));
    const scoreA = parseFloat(await text(a.locator(".side-score")));
    const scoreB = parseFloat(await text(b.locator(".side-score")));
    assert.ok(scoreA > scoreB, `memory on ${scoreA} vs off ${scoreB}`);
    assert.match(await text(page.locator("#verdict")), /^regression: B scores/);
    assert.ok(await page.getByRole("table", { name: "Paired results" }).getByText("regression").count() > 0);
    await shot("compare");
  });

  await step("compare runs of two different suites: their figures side by side", async () => {
    await page.goto(`${base}/#/compare/${ltmA}/${appsRun}`);
    await page.getByRole("region", { name: "Run B" }).filter({ hasText: appsRun }).waitFor();
    assert.match(await text(page.getByRole("region", { name: "Run B" })), /apps · complete/);
    await page.locator("#verdict").waitFor();
  });

  let simRunId = null;
  let simId = null;
  await step("start a simulation from the UI and watch it live to its end", async () => {
    await page.goto(`${base}/#/simulations`);
    await page.getByRole("heading", { name: "Simulations", exact: true }).waitFor();
    // maya is played by an endpoint that never answers: each call times out (0.6 s), the breaker
    // opens after five (about 3 s of running, long enough to watch), then refuses calls; her
    // turns fall back to the judge's simulator.
    const config = `simulation:
  name: browser live run
  agent_injection:
    endpoints:
      - {agent_id: maya, url: "${hangUrl}/respond", protocol: agentworld, timeout_seconds: 0.6}
    circuit_breaker: {failure_threshold: 5, half_open_probe_interval_seconds: 30, success_threshold: 2}
    fallback: {strategy: simulated_agent}
target:
  endpoint: ${agentUrl}
  timeout_seconds: 10
run:
  seed: 5
  rounds: 7
  personas: [maya, gus]
  concurrency: 2
`;
    await page.getByLabel("Simulation config (the YAML of docs/contracts/agent-injection.md)").fill(config);
    await page.getByLabel("Start at once").check();
    // Record what the live view shows as it changes, from the moment the page exists.
    await page.getByRole("button", { name: "Create simulation" }).click();
    await page.getByRole("heading", { name: "Simulation browser live run", exact: true }).waitFor();
    simId = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/sim\//, ""));
    assert.match(simId, /^sim-/);
    await page.evaluate(() => {
      window.__seen = [];
      const note = () => window.__seen.push({
        state: document.getElementById("sim-state")?.textContent,
        rounds: document.querySelectorAll("#live-rounds .live-round").length,
        progress: document.getElementById("sim-progress")?.value,
        max: document.getElementById("sim-progress")?.max,
      });
      note();
      new MutationObserver(note).observe(document.getElementById("view"), { subtree: true, childList: true, characterData: true });
    });
    // Running, rounds arriving, progress not yet full: watched live, not replayed afterwards.
    await page.waitForFunction(() => window.__seen.some((s) => s.state === "running" && s.rounds > 0 && s.progress < s.max));
    await shot("live-sim");
    const log = page.getByRole("log", { name: "Live rounds" });
    await page.getByRole("status", { name: "Simulation state" }).filter({ hasText: "finished" }).waitFor({ timeout: 60_000 });
    const final = page.locator("#final-status");
    assert.match(await text(final), /Simulation finished\./);
    const seen = await page.evaluate(() => window.__seen);
    const roundsSeen = seen.map((s) => s.rounds);
    assert.ok(new Set(roundsSeen.filter((n) => n > 0)).size > 1, `rounds arrived in one go: ${JSON.stringify(seen)}`);
    assert.equal(await page.locator("#sim-progress").evaluate((p) => p.value === p.max), true, "progress full at the end");
    assert.match(await text(page.locator("#sim-summary")), /Goal rate/);
    assert.ok((await log.locator(".live-round").count()) >= 7, "maya's and gus's rounds");
    assert.ok(await log.getByText(/fallback simulated_agent after timeout/).count() > 0, "fallback marked live");
    // The injected endpoint's breaker, live: it opened.
    assert.match(await text(page.getByRole("table", { name: "Injected endpoints" })), /CLOSED→OPEN/);
    simRunId = (await text(final.getByRole("link"))).replace(/^Open run /, "");
    await final.getByRole("link").click();
  });

  await step("the finished simulation's run page: scores, conversations, breaker", async () => {
    await page.getByRole("heading", { name: `Run ${simRunId}`, exact: true }).waitFor();
    assert.match(await text(page.locator("#score")), /\d+\.\d%/);
    const rows = page.getByRole("table", { name: "Conversations" }).locator("tbody tr");
    assert.equal(await rows.count(), 2);
    const maya = rows.filter({ hasText: "maya" });
    assert.match(await text(maya), /fallback/);
    await page.getByRole("img", { name: "Goals reached per conversation" }).waitFor();
    assert.match(await text(page.getByRole("table", { name: "Injected endpoints" })), /maya[\s\S]*(OPEN|HALF_OPEN)/);
    await shot("sim-run");
    await maya.getByRole("link", { name: /transcript/ }).click();
  });

  await step("the transcript: the conversation with fallbacks marked", async () => {
    await page.getByRole("heading", { name: /^Transcript transcripts\//, exact: true }).waitFor();
    const transcript = page.getByRole("list", { name: "Transcript" });
    const turns = transcript.getByRole("listitem");
    assert.ok((await turns.count()) >= 6, `turns: ${await turns.count()}`);
    assert.ok(await transcript.getByText("maya@injected").count() > 0);
    const marks = transcript.locator(".mark");
    assert.ok((await marks.count()) > 0, "no fallback marked");
    assert.match(await text(marks.first()), /⚠ fallback:simulated_agent after timeout/);
    // The agent under test answered the turns the simulator took over.
    assert.ok(await transcript.locator(".turn.agent").count() >= 3);
    assert.match(await text(page.locator("#transcript-summary")), /[1-9]\d* marked/);
    await shot("transcript");
  });

  await step("an apps run: app actions inline in the transcript, failed ones marked, the audit log", async () => {
    await page.goto(`${base}/#/run/${appsRun}`);
    await page.getByRole("heading", { name: `Run ${appsRun}`, exact: true }).waitFor();
    await page.getByRole("img", { name: "pass^k per scenario" }).waitFor();
    const scenarios = page.getByRole("table", { name: "Scenarios" });
    assert.ok((await scenarios.locator("tbody tr").count()) >= 3);
    // The scenario whose first transfer fails for insufficient funds.
    const row = scenarios.locator('tr[data-scenario="insufficient-funds-recovery"]');
    await row.getByRole("link", { name: "trial 0 transcript" }).click();
    const transcript = page.getByRole("list", { name: "Transcript" });
    await transcript.waitFor();
    const actions = transcript.locator(".action");
    assert.ok((await actions.count()) >= 2, "both transfers shown as actions");
    assert.match(await text(actions.first()), /^⚙ paypal\.transfer\(amount=200, to="bob"\)$/);
    const failed = transcript.locator(".turn.tool.marked");
    assert.equal(await failed.count(), 1, "exactly the failed transfer is marked");
    assert.match(await text(failed), /✖ action failed: Insufficient funds/);
    assert.match(await text(page.locator("#transcript-summary")), /2 app actions · 1 marked/);
    await shot("apps-transcript");
    await page.goBack();
    await page.getByRole("table", { name: "Scenarios" }).locator('tr[data-scenario="insufficient-funds-recovery"]')
      .getByRole("link", { name: "trial 0 actions" }).click();
    const audit = page.getByRole("table", { name: "paypal actions" });
    await audit.waitFor();
    assert.equal(await audit.locator("tbody tr").count(), 2);
    assert.match(await text(audit.locator("tbody tr").first()), /✖ Insufficient funds/);
  });

  await step("circuit breakers: the injected endpoint's state and transitions", async () => {
    await page.getByRole("link", { name: "Circuit breakers" }).click();
    const table = page.getByRole("table", { name: "Circuit breakers" });
    await table.waitFor();
    const row = table.locator(`tr[data-endpoint="${simId}/maya"]`);
    assert.match(await text(row), /CLOSED→OPEN/);
    assert.match(await text(row.locator(".circuit")), /^(OPEN|HALF_OPEN)$/);
    await row.getByRole("button", { name: "Health check maya" }).click();
    await row.getByText(/✖ timeout/).waitFor();
    await shot("circuit-breakers");
  });

  await step("simulations list and API pages", async () => {
    await page.getByRole("link", { name: "Simulations" }).click();
    const sims = page.getByRole("table", { name: "Simulations" });
    await sims.waitFor();
    assert.match(await text(sims.locator(`tr[data-sim="${simId}"]`)), /browser live run[\s\S]*finished/);
    await page.getByRole("link", { name: "API", exact: true }).click();
    await page.getByRole("table", { name: "API endpoints" }).getByText("/simulations/{id}/events").waitFor();
  });

  await step("forgetting the token asks for it again", async () => {
    await page.getByRole("button", { name: "Forget token" }).click();
    await page.getByRole("heading", { name: "Access token needed", exact: true }).waitFor();
  });

  assert.deepEqual(consoleErrors, [], "script errors on the page");
  console.log("all dashboard checks passed");
} catch (error) {
  console.error(`FAILED at "${current}" on ${page.url()}:\n${error.stack || error}`);
  try { await page.screenshot({ path: join(shots, "failure.png"), fullPage: true }); } catch (_) { /* best effort */ }
  console.error(`page text:\n${await page.locator("body").innerText().catch(() => "?")}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}

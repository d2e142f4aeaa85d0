/**
 * Guardrails: a built-in input check, and an output check judged by a second, cheap model.
 *
 * A support agent answers from the refund policy. Before the first model call a `blocklist` input
 * guardrail refuses messages that carry a card number's marker; after the final answer an output
 * guardrail asks a cheap model whether the answer promises more than the policy allows. "FAIL" sends
 * the judge's reason back to the agent as feedback (an iteration), "PASS" lets the answer through,
 * and anything else trips the run: a judge that cannot say "pass" lets nothing through.
 *
 * Offline by default (scripted turns over a loopback OpenAI-compatible server: the agent's and the
 * judge's, in the order the run asks for them); with OPENAI_API_KEY or OPENAI_BASE_URL set, the real
 * models (JIANMU_MODEL the agent's, JIANMU_JUDGE_MODEL the judge's, default gpt-4.1-nano).
 * Run: node examples/run.mjs guardrails   (or the test: npx vitest run examples/guardrails.test.ts)
 */
import { blocklist, createReactMachine, defineGuardrail, human, runAgent, system, type AgentOutput, type Guardrail, type ModelClient } from "../index.js";
import { connectModel, type EndpointOptions } from "./support/endpoint.js";
import { failIfFailed } from "./support/outcome.js";
import { scriptedTurns, textTurn } from "./support/turns.js";

export const POLICY = "Refunds: within 30 days of delivery, to the original payment method. After 30 days: store credit only.";
/** The customer's question (`node examples/run.mjs` skips the example at `jianmu serve`, which does not know it). */
export const TASK = "I got my blender 45 days ago and it broke. Can I have my money back?";
export const JUDGE_MODEL = "gpt-4.1-nano";

/** The agent over-promises, the judge says why, the agent corrects itself, the judge lets it through. */
export const OFFLINE_TURNS = scriptedTurns([
  textTurn("Of course! We will refund the full price to your card right away."),
  textTurn("FAIL: the policy allows only store credit after 30 days; the answer promises a refund to the card."),
  textTurn("I'm sorry it broke. Since it has been 45 days, we can offer store credit for the full price, but not a refund to your card."),
  textTurn("PASS"),
]);

const JUDGE_INSTRUCTIONS = [
  "You check a support agent's answer against the company policy.",
  `Policy: ${POLICY}`,
  "Reply PASS if the answer promises nothing the policy does not allow.",
  "Otherwise reply FAIL: followed by one sentence saying what is wrong.",
].join("\n");

/**
 * The output guardrail: one short call to the cheap model per final answer, aborted with the run
 * (`ctx.signal`). Made through `ctx.budgeted(judge)`, its tokens count in the run's usage (and cost),
 * and with `maxBudgetTokens` / `maxBudgetCost` it is capped by what the run has left.
 */
export function policyJudge(judge: ModelClient, onVerdict: (text: string) => void = () => {}): Guardrail {
  return defineGuardrail({
    name: "policy-judge",
    timeoutMs: 30_000,
    async check(subject, ctx) {
      const turn = await ctx.budgeted(judge).complete(
        { messages: [system(JUDGE_INSTRUCTIONS), human(`Customer: ${TASK}\nAnswer: ${subject.text}`)], tools: [], maxTokens: 80, temperature: 0 },
        { signal: ctx.signal },
      );
      const verdict = turn.content.trim();
      onVerdict(verdict);
      if (/^PASS\b/i.test(verdict)) return { verdict: "pass" };
      if (/^FAIL\b/i.test(verdict)) return { verdict: "retry", feedback: `A policy check rejected your answer: ${verdict.replace(/^FAIL:?\s*/i, "")} Answer again, within the policy.` };
      return { verdict: "trip", reason: `the judge answered neither PASS nor FAIL: ${verdict.slice(0, 200)}` };
    },
  });
}

export async function main(options: EndpointOptions & { log?: (line: string) => void; question?: string } = {}): Promise<AgentOutput> {
  const log = options.log ?? console.log;
  const endpoint = await connectModel(OFFLINE_TURNS, options);
  log(endpoint.banner);
  try {
    const judge = endpoint.another((options.env ?? process.env)["JIANMU_JUDGE_MODEL"] || JUDGE_MODEL);
    const machine = createReactMachine({
      modelClient: endpoint.modelClient,
      config: { systemPrompt: `You answer customers of a kitchen shop. ${POLICY}`, maxIterations: 4 },
      inputGuardrails: [blocklist(["card number"], { name: "no-card-numbers" })],
      outputGuardrails: [policyJudge(judge, (verdict) => log(`judge: ${verdict}`))],
    });
    const output = await runAgent(machine, { messages: [human(options.question ?? TASK)] });
    failIfFailed(output, log); // a failed run (a tripped guardrail too) says why, and ends the example with exit code 1
    log(output.finalAnswer ?? "");
    return output;
  } finally {
    await endpoint.close();
  }
}

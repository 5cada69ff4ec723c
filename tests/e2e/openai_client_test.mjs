// End-to-end test of `seam serve` with the official openai npm client.
// usage: node openai_client_test.mjs PORT GOLDEN_JSON [TOOLS_PORT]
// Runs completions, chat completions and streaming against the server and
// checks that greedy completions of the golden prompts give the golden text;
// structured output (structuredChecks below): response_format json_schema
// through create, parse and a stream, json_object, vLLM/sglang fields, and
// named and "required" tool_choice.
// TOOLS_PORT: a server started with the test chat template of server_e2e_test.cpp,
// --tool-call-parser hermes and --reasoning-parser deepseek-r1: tools, a tool
// history and reasoning_content, streamed and not (toolChecks below).
import fs from "node:fs";
import OpenAI from "openai";
// What zodResponseFormat builds (without zod): a json_schema response format that
// chat.completions.parse turns into message.parsed.
import { makeParseableResponseFormat } from "openai/lib/parser";

const [port, goldenPath, toolsPort] = process.argv.slice(2);
if (!port || !goldenPath) {
  console.error("usage: node openai_client_test.mjs PORT GOLDEN_JSON");
  process.exit(2);
}
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });

let failures = 0;
function check(cond, what) {
  if (!cond) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
}
function checkEq(actual, expected, what) {
  check(actual === expected, `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

async function expectStatus(promise, status, what) {
  try {
    await promise;
    check(false, `${what}: expected HTTP ${status}, the call succeeded`);
  } catch (e) {
    checkEq(e.status, status, `${what}: status`);
    check(typeof e.error?.message === "string" && e.error.message.length > 0, `${what}: error.message`);
  }
}

async function streamText(params) {
  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage };
}

async function main() {
  const models = await client.models.list();
  const card = models.data[0];
  check(models.data.length === 1 && typeof card.id === "string", "models.list gives one model");
  const model = card.id;
  const maxLen = card.max_model_len;

  // Golden greedy completions, all in flight at once.
  const golden = JSON.parse(fs.readFileSync(goldenPath, "utf8"));
  let nGolden = 0;
  await Promise.all(
    golden.cases.map(async (c, i) => {
      const n = c.generated_ids.length;
      const byBos = c.stop === "bos";  // the model ended the story with BOS (id 1): an EOS id
      const maxTokens = byBos ? n + 1 : n;
      const params = { model, prompt: c.prompt, max_tokens: maxTokens, temperature: 0 };
      if (c.prompt_ids.length + maxTokens > maxLen) {
        // Over the context: refused, never truncated.
        await expectStatus(client.completions.create(params), 400, `golden case ${i} over the context`);
        return;
      }
      const r = await client.completions.create(params);
      checkEq(r.choices[0].text, c.generated_text, `golden case ${i} text`);
      checkEq(r.choices[0].finish_reason, byBos ? "stop" : "length", `golden case ${i} finish_reason`);
      checkEq(r.usage.prompt_tokens, c.prompt_ids.length, `golden case ${i} usage.prompt_tokens`);
      checkEq(r.usage.completion_tokens, n, `golden case ${i} usage.completion_tokens`);
      checkEq(r.object, "text_completion", "completion object");
      const s = await streamText(params);
      checkEq(s.text, c.generated_text, `golden case ${i} streamed text`);
      checkEq(s.finish, byBos ? "stop" : "length", `golden case ${i} streamed finish_reason`);
      checkEq(s.usage?.completion_tokens, n, `golden case ${i} streamed usage.completion_tokens`);
      nGolden++;
    }),
  );
  check(nGolden >= golden.cases.length - 1, `golden cases run: ${nGolden} of ${golden.cases.length}`);

  // The prompt as token ids gives the same greedy text as the prompt as text.
  const g0 = golden.cases[0];
  const byIds = await client.completions.create({
    model, prompt: g0.prompt_ids, max_tokens: g0.generated_ids.length, temperature: 0,
  });
  checkEq(byIds.choices[0].text, g0.generated_text, "prompt as token ids");

  // Stop strings end the text before the match.
  const stopped = await client.completions.create({
    model, prompt: g0.prompt, max_tokens: 64, temperature: 0, stop: [" little"],
  });
  const cut = g0.generated_text.indexOf(" little");
  checkEq(stopped.choices[0].text, g0.generated_text.slice(0, cut), "stop string text");
  checkEq(stopped.choices[0].finish_reason, "stop", "stop string finish_reason");

  // Chat: stories260K has no chat template, so the plain one renders
  // "content\n" per message; chat must equal the completion of that text.
  const messages = [{ role: "user", content: "Once upon a time" }];
  const chat = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  checkEq(chat.object, "chat.completion", "chat object");
  checkEq(chat.choices[0].message.role, "assistant", "chat role");
  checkEq(chat.choices[0].finish_reason, "length", "chat finish_reason");
  checkEq(chat.usage.completion_tokens, 24, "chat usage.completion_tokens");
  const plain = await client.completions.create({ model, prompt: "Once upon a time\n", max_tokens: 24, temperature: 0 });
  checkEq(chat.choices[0].message.content, plain.choices[0].text, "chat == completion of the plain template");
  check(chat.choices[0].message.content.length > 0, "chat content is not empty");

  // Chat streaming: a role delta first, then content equal to the non-streamed answer.
  const cs = await client.chat.completions.create({
    model, messages, max_completion_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let content = "";
  let sawRole = false;
  let first = true;
  let chatFinish = null;
  let chatUsage = null;
  for await (const chunk of cs) {
    checkEq(chunk.object, "chat.completion.chunk", "chat chunk object");
    if (chunk.usage) chatUsage = chunk.usage;
    for (const c of chunk.choices) {
      if (first) sawRole = c.delta.role === "assistant";
      first = false;
      content += c.delta.content ?? "";
      if (c.finish_reason) chatFinish = c.finish_reason;
    }
  }
  check(sawRole, "the first chat chunk carries role assistant");
  checkEq(content, chat.choices[0].message.content, "streamed chat content");
  checkEq(chatFinish, "length", "streamed chat finish_reason");
  checkEq(chatUsage?.completion_tokens, 24, "streamed chat usage");

  // n samples with a seed: n choices, reproducible.
  const sampled = { model, prompt: "The cat", max_tokens: 16, temperature: 1.0, n: 3, seed: 7 };
  const a = await client.completions.create(sampled);
  const b = await client.completions.create(sampled);
  checkEq(a.choices.length, 3, "n choices");
  checkEq(a.choices.map((c) => c.index).join(","), "0,1,2", "choice indices");
  checkEq(JSON.stringify(a.choices.map((c) => c.text)), JSON.stringify(b.choices.map((c) => c.text)), "seeded n");
  check(new Set(a.choices.map((c) => c.text)).size > 1, "n samples differ");
  checkEq(a.usage.completion_tokens, 48, "usage sums the n choices");

  // Logprobs: completions (legacy shape), echo with the prompt's logprobs, chat (content
  // entries with top_logprobs), streamed chat chunks, and logit_bias steering greedy output.
  const lp = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 6, temperature: 0, logprobs: 3 });
  const lpo = lp.choices[0].logprobs;
  checkEq(lpo.tokens.length, 6, "completion logprobs.tokens");
  checkEq(lpo.tokens.join(""), lp.choices[0].text, "completion logprobs.tokens spell the text");
  checkEq(lpo.text_offset[0], 0, "completion text_offset starts at 0");
  check(lpo.token_logprobs.every((x) => typeof x === "number" && x <= 0), "completion token_logprobs are <= 0");
  check(lpo.top_logprobs.every((t, i) => Math.max(...Object.values(t)) === lpo.token_logprobs[i]),
    "greedy tokens are the most likely of their top_logprobs");
  const echo = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 0, logprobs: 1, echo: true });
  checkEq(echo.choices[0].text, "Once upon a time", "echo with max_tokens 0 gives the prompt");
  checkEq(echo.choices[0].logprobs.tokens.length, echo.usage.prompt_tokens, "echo: a logprob entry per prompt token");
  checkEq(echo.choices[0].logprobs.token_logprobs[0], null, "echo: the first prompt token has no logprob");
  check(echo.choices[0].logprobs.token_logprobs.slice(1).every((x) => x <= 0), "echo: prompt token logprobs <= 0");
  const chatLp = await client.chat.completions.create({ model, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2 });
  const entries = chatLp.choices[0].logprobs.content;
  checkEq(entries.length, 5, "chat logprobs.content entries");
  checkEq(entries.map((e) => e.token).join(""), chatLp.choices[0].message.content, "chat logprob tokens spell the content");
  check(entries.every((e) => e.top_logprobs.length === 2 && e.top_logprobs[0].token === e.token && Array.isArray(e.bytes)),
    "chat top_logprobs: two each, greedy first, bytes given");
  const chatLpStream = await client.chat.completions.create({
    model, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2, stream: true,
  });
  const streamed = [];
  for await (const chunk of chatLpStream)
    for (const c of chunk.choices) streamed.push(...(c.logprobs?.content ?? []));
  checkEq(JSON.stringify(streamed), JSON.stringify(entries), "streamed chat logprobs equal the whole answer's");
  const forced = await client.completions.create({
    model, prompt: "Once upon a time", max_tokens: 3, temperature: 0, logprobs: 0, logit_bias: { "300": 100 },
  });
  const ft = forced.choices[0].logprobs.tokens;
  check(ft.length === 3 && ft[1] === ft[2] && ft[0] !== lpo.tokens[0], "logit_bias +100 forces one token");
  await expectStatus(client.completions.create({ model, prompt: "x", logprobs: 21 }), 400, "logprobs over 20");

  // Errors come back as OpenAI errors.
  await expectStatus(client.completions.create({ model: "no-such-model", prompt: "x" }), 404, "unknown model");
  await expectStatus(client.completions.create({ model, prompt: "x", max_tokens: -1 }), 400, "negative max_tokens");
  await expectStatus(client.chat.completions.create({ model, messages: [] }), 400, "empty messages");

  // Every field is honoured, harmless or refused (server/request_fields.h): the
  // client's harmless fields pass; an unimplemented or unknown one is a 400 naming it.
  const hi = [{ role: "user", content: "Hi" }];
  const harmless = await client.chat.completions.create({
    model, messages: hi, max_tokens: 2, user: "u-1", store: false, metadata: { run: "e2e" },
    service_tier: "auto", parallel_tool_calls: true,
  });
  checkEq(harmless.choices.length, 1, "harmless fields accepted");
  for (const [call, field] of [
    [() => client.completions.create({ model, prompt: "x", suffix: "!" }), "suffix"],
    [() => client.chat.completions.create({ model, messages: hi, response_format: { type: "json_object" }, regex: "a" }),
     "regex"],
    [() => client.chat.completions.create({ model, messages: hi, temprature: 0 }), "temprature"],
  ]) {
    try {
      await call();
      check(false, `${field}: expected HTTP 400, the call succeeded`);
    } catch (e) {
      checkEq(e.status, 400, `${field}: status`);
      checkEq(e.error?.param, field, `${field}: error.param`);
    }
  }

  await structuredChecks(model);
  if (toolsPort) await toolChecks();

  if (failures > 0) {
    console.error(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log(`openai client e2e: all checks passed (${nGolden} golden cases${toolsPort ? ", tools and reasoning" : ""})`);
}

// A person's schema: every value bounded, so a greedy answer of stories260K ends well within 200 tokens.
const personSchema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 10 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    pets: { type: "array", items: { enum: ["cat", "dog", "fish"] }, minItems: 1, maxItems: 3 },
    home: { type: "object", properties: { city: { type: "string", pattern: "^[A-Z][a-z]{1,8}$" } }, required: ["city"] },
    alive: { type: "boolean" },
  },
  required: ["name", "age", "pets", "home", "alive"],
  additionalProperties: false,
};

// The checks a validator would make of personSchema (the e2e tests carry no validator library).
function checkPerson(p, what) {
  check(p !== null && typeof p === "object" && !Array.isArray(p), `${what}: an object`);
  if (!p || typeof p !== "object") return;
  checkEq(Object.keys(p).join(","), "name,age,pets,home,alive", `${what}: keys`);
  check(typeof p.name === "string" && [...p.name].length <= 10, `${what}: name`);
  check(Number.isInteger(p.age) && p.age >= 0 && p.age <= 120, `${what}: age`);
  check(Array.isArray(p.pets) && p.pets.length >= 1 && p.pets.length <= 3 &&
        p.pets.every((x) => ["cat", "dog", "fish"].includes(x)), `${what}: pets`);
  check(p.home && typeof p.home.city === "string" && /^[A-Z][a-z]{1,8}$/.test(p.home.city), `${what}: home.city`);
  check(typeof p.alive === "boolean", `${what}: alive`);
}

// Structured output through the client's own calls.
async function structuredChecks(model) {
  const messages = [{ role: "user", content: "Describe a person." }];
  const responseFormat = { type: "json_schema", json_schema: { name: "person", strict: true, schema: personSchema } };
  const base = { model, messages, max_tokens: 200, temperature: 0 };

  const r = await client.chat.completions.create({ ...base, response_format: responseFormat });
  checkEq(r.choices[0].finish_reason, "stop", "json_schema: finish_reason");
  let person = null;
  try {
    person = JSON.parse(r.choices[0].message.content);
  } catch (e) {
    check(false, `json_schema: content is JSON: ${r.choices[0].message.content}`);
  }
  checkPerson(person, "json_schema");

  // chat.completions.parse with a parseable response format (what zodResponseFormat makes).
  const parsed = await client.chat.completions.parse({
    ...base, temperature: 1, seed: 3,
    response_format: makeParseableResponseFormat(responseFormat, (text) => JSON.parse(text)),
  });
  checkPerson(parsed.choices[0].message.parsed, "parse: message.parsed");

  // Streamed: the chunks' content is the same JSON as the whole answer (greedy).
  const stream = await client.chat.completions.create({ ...base, response_format: responseFormat, stream: true });
  let text = "";
  for await (const chunk of stream) for (const c of chunk.choices) text += c.delta?.content ?? "";
  checkEq(text, r.choices[0].message.content, "json_schema streamed: content");

  // json_object: an object (cut by max_tokens or not, it starts as one).
  const jo = await client.chat.completions.create({ ...base, max_tokens: 40, response_format: { type: "json_object" } });
  check(jo.choices[0].message.content.startsWith("{"), `json_object: ${jo.choices[0].message.content}`);

  // vLLM's and sglang's fields pass through the client as extra body fields.
  const choice = await client.completions.create({
    model, prompt: "The color is", max_tokens: 10, temperature: 1, seed: 1, n: 3,
    structured_outputs: { choice: ["red", "green", "blue"] },
  });
  check(choice.choices.every((c) => ["red", "green", "blue"].includes(c.text)), "structured_outputs.choice");
  const rx = await client.completions.create({
    model, prompt: "Code:", max_tokens: 20, temperature: 1, seed: 2, regex: "[A-Z]{2}-[0-9]{3}",
  });
  check(/^[A-Z]{2}-[0-9]{3}$/.test(rx.choices[0].text), `sglang regex: ${rx.choices[0].text}`);
  await expectStatus(client.chat.completions.create({ ...base, regex: "(unclosed" }), 400, "a regex that does not compile");
}

// Named and "required" tool_choice (on the tools server: its template renders tools; the forced
// call needs no tool-call parser, and its reasoning parser is not applied to a constrained output).
async function forcedToolChecks(tc, model) {
  const client = tc;
  const messages = [{ role: "user", content: "Describe a person." }];
  // The tools template prints each tool as JSON: small schemas keep the prompt within the 512-token context.
  const base = { model, messages, max_tokens: 100, temperature: 0 };
  const ageSchema = {
    type: "object", properties: { n: { type: "string", maxLength: 6 }, age: { type: "integer", minimum: 0, maximum: 99 } },
    required: ["n", "age"], additionalProperties: false,
  };
  const checkAge = (a, what) => {
    check(a && typeof a === "object" && typeof a.n === "string" && [...a.n].length <= 6 && Number.isInteger(a.age) &&
          a.age >= 0 && a.age <= 99 && Object.keys(a).join(",") === "n,age", `${what}: ${JSON.stringify(a)}`);
  };

  // Named tool_choice: one call to the tool, its arguments fit the parameters; parse() parses a strict tool's.
  const tools = [{
    type: "function",
    function: { name: "describe", strict: true, parameters: ageSchema },
  }, {
    type: "function",
    function: { name: "ping", strict: true, parameters: { type: "object", properties: {}, additionalProperties: false } },
  }];
  const named = await client.chat.completions.parse({
    ...base, tools, tool_choice: { type: "function", function: { name: "describe" } },
  });
  const nm = named.choices[0].message;
  checkEq(named.choices[0].finish_reason, "tool_calls", "named tool_choice: finish_reason");
  checkEq(nm.content, null, "named tool_choice: content");
  checkEq(nm.tool_calls?.length, 1, "named tool_choice: one call");
  checkEq(nm.tool_calls?.[0]?.function?.name, "describe", "named tool_choice: the named function");
  checkAge(nm.tool_calls?.[0]?.function?.parsed_arguments, "named tool_choice: parsed_arguments");

  // Streamed through the client's runner: the final message has the same call.
  const runner = client.chat.completions.stream({
    ...base, tools, tool_choice: { type: "function", function: { name: "describe" } },
  });
  const final = await runner.finalChatCompletion();
  checkEq(final.choices[0].message.tool_calls?.[0]?.function?.arguments, nm.tool_calls?.[0]?.function?.arguments,
          "named tool_choice streamed: the same arguments");

  // "required": one or more calls, each to a given tool with fitting arguments.
  const req = await client.chat.completions.create({ ...base, tools, tool_choice: "required" });
  const calls = req.choices[0].message.tool_calls ?? [];
  check(calls.length >= 1, "required: at least one call");
  for (const c of calls) {
    check(["describe", "ping"].includes(c.function.name), `required: a known tool (${c.function.name})`);
    const args = JSON.parse(c.function.arguments);
    if (c.function.name === "describe") checkAge(args, "required: describe's arguments");
    else checkEq(JSON.stringify(args), "{}", "required: ping's arguments");
  }
}

// Python's json.dumps (what the template's tojson prints): ", " and ": " separators, keys in order.
function pyDumps(v) {
  if (Array.isArray(v)) return "[" + v.map(pyDumps).join(", ") + "]";
  if (v !== null && typeof v === "object")
    return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + pyDumps(x)).join(", ") + "}";
  return JSON.stringify(v);
}

// Tools and reasoning. stories260K never writes a tool call or </think>; with
// deepseek-r1 its whole greedy output is reasoning_content, which must equal the
// greedy completion of the exact text the template renders for the request
// (tools in the client's order, the tool call's string arguments as an object).
async function toolChecks() {
  const tc = new OpenAI({ baseURL: `http://127.0.0.1:${toolsPort}/v1`, apiKey: "none", maxRetries: 0, timeout: 300000 });
  const model = (await tc.models.list()).data[0].id;
  const tools = [{
    type: "function",
    function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } }, description: "Weather" },
  }];
  const args = { city: "Paris", unit: "c" };
  const messages = [
    { role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: JSON.stringify(args) } }] },
    { role: "tool", tool_call_id: "call_1", content: "Sunny" },
  ];
  const rendered =
    "TOOLS:" + tools.map(pyDumps).join("") + "\n" +
    "user:Weather in Paris?\n" +
    `assistant:None[get_weather ${pyDumps(args)} city=Paris]\n` +
    "tool:Sunny(call_1)\n";
  const expected = await tc.completions.create({ model, prompt: rendered, max_tokens: 10, temperature: 0 });
  const text = expected.choices[0].text;
  check(text.length > 0 && !text.includes("</think>"), "tools: the greedy text is a plain story");

  const params = { model, messages, tools, tool_choice: "auto", max_tokens: 10, temperature: 0 };
  const r = await tc.chat.completions.create(params);
  const m = r.choices[0].message;
  checkEq(r.usage.prompt_tokens, expected.usage.prompt_tokens, "tools: prompt tokens of the rendered text");
  checkEq(m.reasoning_content, text, "tools: reasoning_content");
  checkEq(m.content, null, "tools: content (all reasoning)");
  checkEq(m.tool_calls, undefined, "tools: no tool calls in a story");
  checkEq(r.choices[0].finish_reason, "length", "tools: finish_reason");

  const s = await tc.chat.completions.create({ ...params, stream: true });
  let reasoning = "";
  let content = "";
  let finish = null;
  let nToolDeltas = 0;
  for await (const chunk of s) {
    for (const c of chunk.choices) {
      reasoning += c.delta.reasoning_content ?? "";
      content += c.delta.content ?? "";
      nToolDeltas += (c.delta.tool_calls ?? []).length;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  checkEq(reasoning, text, "tools streamed: reasoning_content deltas");
  checkEq(content, "", "tools streamed: content");
  checkEq(nToolDeltas, 0, "tools streamed: tool-call deltas");
  checkEq(finish, "length", "tools streamed: finish_reason");

  // Logprobs through the parsers: the entries spell the reasoning, and the streamed
  // chunks' entries (a held-back delta's too) equal the whole answer's.
  const lw = await tc.chat.completions.create({ ...params, logprobs: true, top_logprobs: 1 });
  const lwEntries = lw.choices[0].logprobs.content;
  checkEq(lw.choices[0].message.reasoning_content, text, "tools with logprobs: reasoning_content");
  checkEq(lwEntries.length, lw.usage.completion_tokens, "tools with logprobs: an entry per token");
  checkEq(lwEntries.map((e) => e.token).join(""), text, "tools with logprobs: the entries spell the text");
  const ls = await tc.chat.completions.create({ ...params, logprobs: true, top_logprobs: 1, stream: true });
  const lsEntries = [];
  for await (const chunk of ls)
    for (const c of chunk.choices) lsEntries.push(...(c.logprobs?.content ?? []));
  checkEq(JSON.stringify(lsEntries), JSON.stringify(lwEntries), "tools streamed with logprobs: the whole answer's entries");

  // separate_reasoning false (sglang's field): the text stays content.
  const kept = await tc.chat.completions.create({ ...params, separate_reasoning: false });
  checkEq(kept.choices[0].message.content, text, "separate_reasoning false: content");
  checkEq(kept.choices[0].message.reasoning_content, undefined, "separate_reasoning false: no reasoning_content");

  await expectStatus(
    tc.chat.completions.create({ ...params, tool_choice: { type: "function", function: { name: "get_time" } } }),
    400, "tool_choice naming no tool");
  await forcedToolChecks(tc, model);
}

main().catch((e) => {
  console.error("FAIL: unexpected error:", e);
  process.exit(1);
});

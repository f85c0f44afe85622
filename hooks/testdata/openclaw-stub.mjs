// Loads memvault's installed OpenClaw plugin with a stub of OpenClaw's
// plugin API and fires the hooks a script names, in its order, as
// OpenClaw 2026.9.6 does (hooks/openclaw_plugin_test.go). One node process
// is one OpenClaw process: the Gateway, or one `openclaw agent --local` run.
//
//   node openclaw-stub.mjs <plugin dir> '<steps as JSON>'
//
// A step is [hook, event, ctx]; ctx gets sessionId/sessionKey from
// "session" and, except for session_start and session_end (the Gateway's
// carry none), workspaceDir. Prints one JSON line: what each step returned.
import { pathToFileURL } from "node:url"
import { join } from "node:path"

const [dir, stepsJSON] = process.argv.slice(2)
// Two instances of the module, as OpenClaw imports it again in a run that
// compacts: a step named "2:<hook>" goes to the second one's handlers.
const handlers = { 1: {}, 2: {} }
for (const n of [1, 2]) {
  const api = { rootDir: dir, registrationMode: "full", on(name, fn) { handlers[n][name] = fn } }
  const mod = await import(pathToFileURL(join(dir, "index.js")).href + "?instance=" + n)
  mod.default(api)
  mod.default({ ...api, registrationMode: "discovery" }) // OpenClaw registers again; the later one's handlers run
}
const out = []
for (let [name, event, c] of JSON.parse(stepsJSON)) {
  let n = 1
  if (name.startsWith("2:")) [n, name] = [2, name.slice(2)]
  const ctx = { sessionId: c.session, sessionKey: "agent:main:explicit:" + c.session }
  if (name !== "session_start" && name !== "session_end") ctx.workspaceDir = c.workspace
  const fn = handlers[n][name]
  out.push(fn ? (await fn(event, ctx)) ?? null : "no handler")
}
console.log(JSON.stringify(out))

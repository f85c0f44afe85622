// memvault plugin for OpenClaw, written by `memvault install openclaw`. It
// maps OpenClaw's plugin hooks onto memvault's runtime events by running
// `memvault hook openclaw <event>` with a JSON payload on stdin. Every call
// fails open: a memvault problem never breaks a turn.
import { spawnSync } from "node:child_process"
import { resolve } from "node:path"

// At project scope BIN is "memvault", found on PATH (every hook a silent
// no-op without it); at user scope the binary that installed it.
const BIN = __MEMVAULT_BIN__
// At project scope, the project is the one the plugin folder lies in
// (<project>/.openclaw/plugins/memvault/, which OpenClaw passes as
// api.rootDir: it runs a copy of this file from elsewhere), and its vault is
// found from there. OpenClaw's own workspace folder is usually elsewhere
// (~/.openclaw/workspace). At user scope it is that workspace.
const PROJECT_SCOPE = __MEMVAULT_PROJECT_SCOPE__
let PROJECT = ""

function hook(event, payload) {
  try {
    const r = spawnSync(BIN, ["hook", "openclaw", event], {
      input: JSON.stringify(payload), encoding: "utf8", timeout: 5000,
    })
    return r.status === 0 && typeof r.stdout === "string" ? r.stdout.trim() : ""
  } catch {
    return ""
  }
}

function textOf(message) {
  const c = message?.content
  if (typeof c === "string") return c
  if (Array.isArray(c)) return c.filter((b) => b?.type === "text").map((b) => b.text).join("\n")
  return ""
}

// Per session, shared by every registration (OpenClaw calls register
// several times, full then discovery, and runs the handlers of a later
// one, so every registration installs them):
//
//   startContext  the start context memvault gave the session in this
//                 process, sent with every prompt as system context (a
//                 prompt's prependContext is not kept in OpenClaw's history,
//                 so a start context sent once would be gone at the next
//                 turn);
//   startSource   why the next prompt starts the session: "startup" or
//                 "resume" from the Gateway's session_start, "compact"
//                 after a compaction. A session first seen at a prompt
//                 (`openclaw agent --local`, which fires no session_start,
//                 or a Gateway restarted mid-session) starts there:
//                 "startup" with no history, "resume" with some;
//   workspace     the folder OpenClaw ran the session's last prompt in
//                 (session_start and session_end carry none).
//
// session_start only notes the source: it cannot inject anything, and the
// start context is fetched, and session.started recorded, once, at the
// first prompt, in both orders.
//
// OpenClaw may import this module more than once in a process (a run that
// compacts registers the plugin again, and its compaction hooks and the
// prompt's run in different instances): the state is kept on globalThis, so
// that every instance in the process shares it.
const state = (globalThis.__memvaultOpenClaw ??= { startContext: new Map(), startSource: new Map(), workspace: new Map() })
const { startContext, startSource, workspace } = state

export default function register(api) {
  if (PROJECT_SCOPE && api?.rootDir) PROJECT = resolve(api.rootDir, "..", "..", "..")
  const id = (ctx) => ctx?.sessionId || ctx?.sessionKey || "default"
  const cwd = (ctx) => {
    const sid = id(ctx)
    if (ctx?.workspaceDir) workspace.set(sid, ctx.workspaceDir)
    return PROJECT || workspace.get(sid) || process.cwd()
  }

  api.on("session_start", async (event, ctx) => {
    const sid = id(ctx)
    startContext.delete(sid)
    startSource.set(sid, event?.resumedFrom ? "resume" : "startup")
    return undefined
  })
  api.on("before_prompt_build", async (event, ctx) => {
    const sid = id(ctx)
    const dir = cwd(ctx)
    if (!startContext.has(sid)) {
      const history = Array.isArray(event?.messages) && event.messages.length > 0
      const source = startSource.get(sid) || (history ? "resume" : "startup")
      startSource.delete(sid)
      startContext.set(sid, hook("session-start", { session_id: sid, cwd: dir, source }))
    }
    const start = startContext.get(sid)
    const prompt = hook("prompt-submit", { session_id: sid, cwd: dir, prompt: event?.prompt || "" })
    const out = {}
    if (start) out.appendSystemContext = start
    if (prompt) out.prependContext = prompt
    return start || prompt ? out : undefined
  })
  api.on("agent_end", async (event, ctx) => {
    const msgs = Array.isArray(event?.messages) ? event.messages : []
    const last = [...msgs].reverse().find((m) => m?.role === "assistant")
    hook("stop", { session_id: id(ctx), cwd: cwd(ctx), last_assistant_message: textOf(last) })
  })
  api.on("before_compaction", async (_event, ctx) => {
    hook("pre-compaction", { session_id: id(ctx), cwd: cwd(ctx) })
  })
  api.on("after_compaction", async (_event, ctx) => {
    const sid = id(ctx)
    hook("compaction-complete", { session_id: sid, cwd: cwd(ctx) })
    // The next prompt fetches the start context again.
    startContext.delete(sid)
    startSource.set(sid, "compact")
  })
  api.on("session_end", async (event, ctx) => {
    const sid = id(ctx)
    hook("session-end", { session_id: sid, cwd: cwd(ctx), reason: event?.reason || "" })
    startContext.delete(sid)
    startSource.delete(sid)
    workspace.delete(sid)
  })
}

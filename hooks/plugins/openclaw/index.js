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

// Sessions that got their start context, shared by every registration:
// OpenClaw calls register several times (full, then discovery) and runs the
// handlers of a later one, so every registration installs them.
const started = new Set()

export default function register(api) {
  if (PROJECT_SCOPE && api?.rootDir) PROJECT = resolve(api.rootDir, "..", "..", "..")
  const id = (ctx) => ctx?.sessionId || ctx?.sessionKey || "default"
  const cwd = (ctx) => PROJECT || ctx?.workspaceDir || process.cwd()

  api.on("session_start", async (_event, ctx) => {
    started.add(id(ctx))
    return undefined
  })
  api.on("before_prompt_build", async (event, ctx) => {
    const sid = id(ctx)
    const parts = []
    if (!started.has(sid)) {
      started.add(sid)
      parts.push(hook("session-start", { session_id: sid, cwd: cwd(ctx), source: "startup" }))
    }
    parts.push(hook("prompt-submit", { session_id: sid, cwd: cwd(ctx), prompt: event?.prompt || "" }))
    const text = parts.filter(Boolean).join("\n\n")
    return text ? { prependContext: text } : undefined
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
    hook("compaction-complete", { session_id: id(ctx), cwd: cwd(ctx) })
    started.delete(id(ctx)) // inject the start context again on the next prompt
  })
  api.on("session_end", async (_event, ctx) => {
    hook("session-end", { session_id: id(ctx), cwd: cwd(ctx) })
  })
}

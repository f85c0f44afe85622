// memvault plugin for OpenCode, written by `memvault install opencode`.
// It maps OpenCode's plugin hooks onto memvault's runtime events by running
// `memvault hook opencode <event>` with a JSON payload on stdin. Every call
// fails open: a memvault problem never breaks a turn.
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

// At project scope (the plugin in <project>/.opencode/plugins/) BIN is
// "memvault", found on PATH, and the project is where this file lies, so
// the file holds no machine path and can be committed. At user scope BIN
// is the binary that installed it and the project is OpenCode's own.
// Without memvault on PATH every hook is a silent no-op.
const BIN = __MEMVAULT_BIN__
const PROJECT = __MEMVAULT_PROJECT_SCOPE__ ? fileURLToPath(new URL("../..", import.meta.url)) : ""

function hook(event, payload) {
  try {
    const r = spawnSync(BIN, ["hook", "opencode", event], {
      input: JSON.stringify(payload), encoding: "utf8", timeout: 5000,
    })
    return r.status === 0 && typeof r.stdout === "string" ? r.stdout.trim() : ""
  } catch {
    return ""
  }
}

export const Memvault = async ({ directory, worktree }) => {
  const cwd = PROJECT || worktree || directory || process.cwd()
  const startContext = new Map() // sessionID -> context injected on every model call
  const promptContext = new Map() // sessionID -> context for the current prompt
  const roles = new Map() // messageID -> role
  const summaries = new Set() // messageIDs of compaction summaries (assistant, summary: true)
  const lastText = new Map() // sessionID -> {id, text} of the latest assistant message
  const summaryText = new Map() // sessionID -> text of its latest compaction summary
  const open = new Set() // sessions this OpenCode process started and has not ended

  // OpenCode has no session-end event: a session ends when it is deleted
  // (session.deleted) or when this OpenCode process exits (the end of an
  // `opencode run`, or of the TUI), as Claude Code's SessionEnd fires when
  // claude exits; a later process that continues it starts it again. The
  // exit handler may only do synchronous work, which spawnSync is.
  function end(sid, reason) {
    if (!open.delete(sid)) return
    hook("session-end", { session_id: sid, cwd, reason })
    startContext.delete(sid)
  }
  process.once("exit", () => {
    for (const sid of [...open]) end(sid, "exit")
  })

  function start(sid, source) {
    open.add(sid)
    if (!startContext.has(sid)) startContext.set(sid, hook("session-start", { session_id: sid, cwd, source }))
    return startContext.get(sid)
  }

  return {
    event: async ({ event }) => {
      const p = event?.properties || {}
      const sid = p.sessionID || p.info?.sessionID || p.part?.sessionID
      switch (event?.type) {
        case "session.created":
          if (p.info?.id) start(p.info.id, "startup")
          break
        case "session.deleted":
          if (p.info?.id) end(p.info.id, "deleted")
          break
        case "message.updated":
          if (p.info?.id) roles.set(p.info.id, p.info.role)
          // The compaction's summary is an assistant message of its own
          // (mode "compaction", summary: true), streamed before
          // session.compacted: not the turn's answer.
          if (p.info?.id && p.info.role === "assistant" && (p.info.summary === true || p.info.mode === "compaction")) {
            summaries.add(p.info.id)
          }
          break
        case "message.part.updated":
          if (p.part?.type === "text" && roles.get(p.part.messageID) === "assistant" && sid) {
            if (summaries.has(p.part.messageID)) summaryText.set(sid, p.part.text || "")
            else lastText.set(sid, { id: p.part.messageID, text: p.part.text || "" })
          }
          break
        case "session.idle":
          if (sid) {
            const last = lastText.get(sid)
            hook("stop", { session_id: sid, cwd, last_assistant_message: last ? last.text : "" })
          }
          break
        case "session.compacted":
          if (sid) {
            hook("compaction-complete", { session_id: sid, cwd, compact_summary: summaryText.get(sid) || "" })
            summaryText.delete(sid)
            startContext.delete(sid) // the compaction dropped it: inject it again
            startContext.set(sid, hook("session-start", { session_id: sid, cwd, source: "compact" }))
          }
          break
      }
    },
    "chat.message": async (input, output) => {
      const sid = input?.sessionID
      if (!sid) return
      start(sid, "startup")
      const text = (output?.parts || []).filter((x) => x?.type === "text").map((x) => x.text).join("\n")
      promptContext.set(sid, hook("prompt-submit", { session_id: sid, cwd, prompt: text }))
    },
    "experimental.chat.system.transform": async (input, output) => {
      // Runs before every model call, title generation included: it only
      // reads what the other hooks cached.
      const sid = input?.sessionID
      if (!sid || !output?.system) return
      const c = start(sid, "startup")
      if (c) output.system.push(c)
      const pc = promptContext.get(sid)
      if (pc) output.system.push(pc)
    },
    "experimental.session.compacting": async (input, output) => {
      const sid = input?.sessionID
      if (!sid) return
      hook("pre-compaction", { session_id: sid, cwd })
      const c = startContext.get(sid)
      if (c && output?.context) output.context.push(c)
    },
  }
}

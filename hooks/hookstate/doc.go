// Package hookstate is the state the hook runtime keeps in a vault beside
// the memory itself, uncommitted and outside the ledger: the queue of jobs
// a hook deferred (jobs.go), the job worker's lock, which a hook hands to
// the detached worker it starts (jobworker.go), what a session was shown
// (sessionmarks.go), the sessions that started and did not end
// (opensessions.go), and the hook log (hooklog.go). Every file is reached
// through the vault's fileio.Root.
//
// The engine knows none of it: the queue keeps the order of the names it
// hands out in the vault's Slot, and the spool's problems reach the hook
// log through the vault's Warn, which the front ends point here.
package hookstate

package cli

// Ids as people type them: any unique prefix of an id names it (docs/API.md,
// "Ids"); the vault resolves it (vault/ids.go) and the ledger stores the
// full id always.

// idHelp is the description of a command that takes an event id.
const idHelp = "ID is an event id (e_ and 26 characters) or any unique prefix of one, with or without\n" +
	"e_, of at least 4 characters after it: an ambiguous prefix lists the events it could be."

// Command memvault is the lossless working memory for AI coding agents.
package main

import (
	"os"

	"github.com/memvault/memvault/cmd/memvault/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}

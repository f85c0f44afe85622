package vault

import "github.com/memvault/memvault/vault/fileio"

// WriteFileAtomic replaces path with data atomically and durably; it is
// fileio.WriteAtomic, kept under this name for callers that predate fileio.
//
// Deprecated: use fileio.WriteAtomic.
func WriteFileAtomic(path string, data []byte) error {
	return fileio.WriteAtomic(path, data)
}

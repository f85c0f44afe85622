//go:build race

package main

// raceEnabled: the race detector multiplies a child's memory, so memory
// bounds are only asserted without it.
const raceEnabled = true

//go:build race

package main

// raceEnabled says these tests run under the race detector.
const raceEnabled = true

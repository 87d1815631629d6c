//go:build !race

package relayload_test

const raceEnabled = false

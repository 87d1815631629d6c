//go:build !race

package httpc

const raceEnabled = false

//go:build !linux

package loadtest_test

// benchGenMain runs a generator of BenchmarkWholePath, which is Linux's.
func benchGenMain() {}

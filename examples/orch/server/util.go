package server

import (
	"slices"
	"strconv"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sortedBy sorts xs by key, in place, and returns it.
func sortedBy[T any](xs []T, key func(T) int64) []T {
	slices.SortFunc(xs, func(a, b T) int { return cmpInt(key(a), key(b)) })
	return xs
}

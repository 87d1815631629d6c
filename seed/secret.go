package seed

import (
	"fmt"
	"io"
)

// Secret is a population's credential: the key its users' tokens or
// passwords are derived from. Every way of printing or encoding it shows
// "[redacted]", so a spec holding one can be logged or stored safely.
type Secret []byte

const redacted = "[redacted]"

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if len(s) == 0 {
		return ""
	}
	return redacted
}

// GoString returns the same as String, for %#v.
func (s Secret) GoString() string { return s.String() }

// Format writes the same as String for every verb, so neither %v nor %x
// nor %d prints the secret's bytes.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// MarshalText returns the same as String, so JSON and text encoders never
// see the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

package mockupstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// Duration is a time.Duration that reads from JSON either as a Go duration
// string ("1.2s", "250ms") or as a number of milliseconds (1200), and writes
// as a Go duration string.
type Duration time.Duration

// durationType names Duration in decoding errors, which callers reword
// with durationWant.
var durationType = reflect.TypeFor[Duration]()

// durationWant says what a Duration accepts.
const durationWant = `a Go duration such as "1.2s" or a number of milliseconds`

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns d in Go's duration syntax, such as "1.2s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return &json.UnmarshalTypeError{Value: fmt.Sprintf("string %q", s), Type: durationType}
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return &json.UnmarshalTypeError{Value: string(b), Type: durationType}
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

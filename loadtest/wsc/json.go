package wsc

import (
	"encoding/json"
	"fmt"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// JSONRPCID returns the id of a JSON-RPC response: the top-level "id"
// member of an object that has no "method" member (a request or
// notification from the target has one, and is no reply). A string id is
// returned without its quotes (escapes are kept as written) and a number
// as written, so that Call(ctx, msg, "7") matches a reply with "id":7 or
// "id":"7". It returns nil for a message with no id or a null one. It
// scans the message without decoding it and allocates nothing.
func JSONRPCID(msg []byte) []byte {
	var id []byte
	method := false
	eachMember(msg, func(key, val []byte) bool {
		switch string(key) {
		case "id":
			id = idValue(val)
		case "method":
			method = true
			return false
		}
		return true
	})
	if method {
		return nil
	}
	return id
}

// IDField returns an extractor of the top-level member name of a JSON
// object, for Config.ID when the target's messages carry their id under
// another name (such as a notification's "event_id"): a string without its
// quotes, a number as written, nil when absent or null.
func IDField(name string) func(msg []byte) []byte {
	return func(msg []byte) []byte {
		var id []byte
		eachMember(msg, func(key, val []byte) bool {
			if string(key) == name {
				id = idValue(val)
				return false
			}
			return true
		})
		return id
	}
}

// idValue returns a raw JSON value as an id: a string's contents, a
// number or other literal as written, nil for null, an object or an array.
func idValue(val []byte) []byte {
	switch {
	case len(val) >= 2 && val[0] == '"':
		return val[1 : len(val)-1]
	case len(val) == 0 || val[0] == '{' || val[0] == '[' || string(val) == "null":
		return nil
	default:
		return val
	}
}

// JSONRPCReply judges a JSON-RPC response: ProtocolError when it is not
// valid JSON, AppError when it has a non-null "error" member (with the
// member, shortened, in Err), else OK. Bytes is the reply's size.
func JSONRPCReply(msg []byte) loadtest.Response {
	n := int64(len(msg))
	if !json.Valid(msg) {
		return loadtest.Response{Outcome: loadtest.ProtocolError, Bytes: n,
			Err: httpc.NewProtocolError("wsc: reply is not valid JSON", msg)}
	}
	var rpcErr []byte
	eachMember(msg, func(key, val []byte) bool {
		if string(key) == "error" && string(val) != "null" {
			rpcErr = val
			return false
		}
		return true
	})
	if rpcErr != nil {
		return loadtest.Response{Outcome: loadtest.AppError, Bytes: n, Err: fmt.Errorf("wsc: JSON-RPC error %s", excerpt(rpcErr, 200))}
	}
	return loadtest.Response{Outcome: loadtest.OK, Bytes: n}
}

// excerpt returns at most n bytes of b as a string, marked when cut.
func excerpt(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// eachMember calls f with the key (without quotes) and raw value of each
// top-level member of the JSON object msg, in order, until f returns
// false or the object ends. It stops at the first byte that breaks the
// syntax, so that a truncated message still yields the members before the
// break; validating is the caller's business.
func eachMember(msg []byte, f func(key, val []byte) bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return // '}' ends the object; anything else breaks it
		}
		kEnd := stringEnd(msg, i)
		if kEnd < 0 {
			return
		}
		key := msg[i+1 : kEnd-1]
		i = skipSpace(msg, kEnd)
		if i >= len(msg) || msg[i] != ':' {
			return
		}
		i = skipSpace(msg, i+1)
		vEnd := valueEnd(msg, i)
		if vEnd < 0 {
			return
		}
		if !f(key, msg[i:vEnd]) {
			return
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) || msg[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string starting at b[i] (a
// quote), or -1 when it is not terminated.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd returns the index after the value starting at b[i], or -1 when
// it is cut short. Objects and arrays are matched by depth, skipping
// strings; a literal ends at a delimiter.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				e := stringEnd(b, i)
				if e < 0 {
					return -1
				}
				i = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				if j == i {
					return -1
				}
				return j
			}
			j++
		}
		return -1 // a literal runs to the end: the object is cut short
	}
}

package mockupstream

import "fmt"

// Kind is the kind of request the upstream serves: a JSON-RPC method or
// the plain /echo endpoint. [Stats] counts requests by kind under
// [Kind.String].
type Kind uint8

// The kinds of request.
const (
	// KindInitialize is the JSON-RPC method "initialize"; its latency is
	// Behavior.Initialize.
	KindInitialize Kind = iota
	// KindList is "tools/list"; its latency is Behavior.List.
	KindList
	// KindCall is "tools/call"; its latency is Behavior.Call, its text
	// size is drawn from Behavior.Sizes, and it is the only kind that
	// answers tool errors.
	KindCall
	// KindEcho is the plain HTTP endpoint /echo; unless its query sets
	// them, it draws latency, size and faults as KindCall does.
	KindEcho
	// KindPing is the JSON-RPC method "ping", answered at once.
	KindPing
	// KindNotification is a JSON-RPC notification (no id), acknowledged
	// with 202 and no body.
	KindNotification
	// KindOther is a request that named no known method or could not be
	// parsed.
	KindOther

	// NumKinds is the number of kinds.
	NumKinds = int(KindOther) + 1
)

var kindNames = [NumKinds]string{"initialize", "tools/list", "tools/call", "echo", "ping", "notification", "other"}

// String returns the kind's name as stats spell it ("tools/call", "echo").
func (k Kind) String() string {
	if int(k) < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Package qos holds the scheduling classes: what a request asks for with the x-superfluid-qos
// header and what an API key may ask for at most. It is a leaf (it imports nothing of the
// module), so that both the core, whose gate grants lanes by class (server/core/qos.go), and
// server/auth, which keeps a key's ceiling, can use it without importing each other.
//
// A new class goes here (a constant in order and its name), then into the gate's order in
// server/core/qos.go.
package qos

import (
	"fmt"
	"strings"
)

// Class is a scheduling class. Higher values go first: Interactive > Completion > Agent >
// Background. Unset is no class (as a key's ceiling: no ceiling).
type Class int

// Scheduling classes.
const (
	Unset Class = iota
	Background
	Agent
	Completion
	Interactive
)

var names = [...]string{"", "background", "agent", "completion", "interactive"}

// String is the class's name as the header and the policy file write it ("" when unset).
func (c Class) String() string {
	if c < 0 || int(c) >= len(names) {
		return fmt.Sprintf("QoS(%d)", int(c))
	}
	return names[c]
}

// Parse reads a class name: interactive, completion, agent or background; "" is Unset.
func Parse(s string) (Class, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, n := range names {
		if s == n {
			return Class(i), nil
		}
	}
	return Unset, fmt.Errorf("unknown QoS class %q: use interactive, completion, agent or background", s)
}

package qos

import "testing"

func TestQoS(t *testing.T) {
	for _, name := range []string{"interactive", "completion", "agent", "background", ""} {
		q, err := Parse(name)
		if err != nil || q.String() != name {
			t.Errorf("Parse(%q) = %v, %v", name, q, err)
		}
	}
	if _, err := Parse("urgent"); err == nil {
		t.Error("urgent accepted")
	}
	if !(Interactive > Completion && Completion > Agent && Agent > Background && Background > Unset) {
		t.Error("classes out of order")
	}
}

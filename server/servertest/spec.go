package servertest

import (
	"encoding/json"
	"testing"
)

// FakeSpec is what the fake engine (enginetest) reports for its "Hello world!" reply (12
// tokens) with speculation in effect, as a reply's superfluid.spec: half proposed, half of
// those accepted.
const FakeSpec = `{"proposed":6,"accepted":3,"acceptance_rate":0.5}`

// SpecOf is the "spec" member of a reply's raw superfluid object; "" when it has none.
func SpecOf(t *testing.T, superfluid string) string {
	t.Helper()
	if superfluid == "" {
		return ""
	}
	var extra struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal([]byte(superfluid), &extra); err != nil {
		t.Fatalf("superfluid %s: %v", superfluid, err)
	}
	return string(extra.Spec)
}

package servertest

import (
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/core"
)

// WaitMoveAllowed waits up to 10 s until svc would begin a models move (what stopped it, such
// as a cancelled pull the server is still ending, has let go), and fails the test otherwise.
func WaitMoveAllowed(t *testing.T, svc *core.Service) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		end, err := svc.BeginModelsMove()
		if err == nil {
			end()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a models move is still refused: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

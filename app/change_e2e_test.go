package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

// workerProcesses are the pids of this process's children that run a worker for the model at
// path (its --model argument): what runs, whatever the manager believes.
func workerProcesses(t *testing.T, path string) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read past its last ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(filepath.Dir(stat), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--model" && args[i+1] == path {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// psModels is what /api/ps lists.
func psModels(t *testing.T, url string) []string {
	t.Helper()
	res, err := http.Get(url + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ps struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ps.Models {
		names = append(names, m.Name)
	}
	return names
}

// TestChangeWithARequestAtTheGate: the model's one lane is busy and a second request waits at
// the QoS gate when the model's settings change (a new window: it reloads) or an admin deletes
// it. The running stream completes, the waiter runs before the change completes or gets a
// clean error, and afterwards /api/ps matches the worker processes that run: none, and after a
// settings change the next request starts exactly one worker, the one the manager lists.
func TestChangeWithARequestAtTheGate(t *testing.T) {
	for _, change := range []string{"settings change", "delete"} {
		t.Run(change, func(t *testing.T) {
			a, srv, model, w := slowServer(t)
			m, err := a.Service().Model(model)
			if err != nil {
				t.Fatal(err)
			}
			path := m.Entry.Path
			pid := w.PID()
			if got := workerProcesses(t, path); len(got) != 1 || got[0] != pid {
				t.Fatalf("before the %s: worker processes %v, the manager's worker %d", change, got, pid)
			}
			running := longStream(t, srv.URL, model, 300)
			waitFor(t, "the lane busy", func() bool { return w.InFlight() == 1 })
			waiting := sendChat(srv.URL, model)
			waitFor(t, "a request waiting at the gate", func() bool { return m.Waiting() == 1 })
			switch change {
			case "settings change":
				if err := a.Service().SetModelSettings(context.Background(), store.ModelSettings{ModelID: m.Entry.ID, ContextLength: 384}); err != nil {
					t.Fatalf("settings change: %v", err)
				}
			case "delete":
				// Ollama's delete removes the model (DELETE /v1/models/ only unloads it).
				req, _ := http.NewRequest("DELETE", srv.URL+"/api/delete", strings.NewReader(fmt.Sprintf(`{"model":%q}`, model)))
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					t.Fatalf("delete: %d %s", res.StatusCode, b)
				}
			}
			if n := <-running; n != 300 {
				t.Fatalf("the running stream got %d tokens, want all 300 (the %s drains it)", n, change)
			}
			if r := <-waiting; r.status != 200 && (r.status != 500 || !strings.Contains(r.body, "unloaded before this request")) {
				t.Fatalf("the request waiting at the gate: %d %s", r.status, r.body)
			}
			// Afterwards: nothing listed, nothing running, neither the worker that served the
			// model nor one its client started on demand.
			if got := w.PID(); got != 0 {
				t.Fatalf("the old worker client still has worker %d after the %s", got, change)
			}
			waitFor(t, "the unloaded worker gone", func() bool { return len(workerProcesses(t, path)) == 0 })
			if ps := psModels(t, srv.URL); len(ps) != 0 {
				t.Fatalf("/api/ps lists %v after the %s, with no worker running", ps, change)
			}
			if change == "delete" {
				status, _, b := post(t, srv.URL+"/v1/chat/completions", chatJSON(model, "hi", `,"max_tokens":2`))
				if status != 404 {
					t.Fatalf("a chat with the deleted model: %d %s", status, b)
				}
				if got := workerProcesses(t, path); len(got) != 0 {
					t.Fatalf("a request for the deleted model started worker %v", got)
				}
				return
			}
			status, _, b := post(t, srv.URL+"/v1/chat/completions", chatJSON(model, "hi", `,"max_tokens":2`))
			if status != 200 {
				t.Fatalf("the next request: %d %s", status, b)
			}
			now := a.Worker()
			got := workerProcesses(t, path)
			if len(got) != 1 || now == w || got[0] != now.PID() {
				t.Fatalf("after the next request: worker processes %v, the manager's worker %d (a new client: %v)", got, now.PID(), now != w)
			}
			if ps := psModels(t, srv.URL); len(ps) != 1 {
				t.Fatalf("/api/ps lists %v with one worker running", ps)
			}
			if n := now.Info().ContextLength; n != 384 {
				t.Fatalf("the reloaded worker has a window of %d, want the new setting's 384", n)
			}
		})
	}
}

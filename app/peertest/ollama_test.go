//go:build linux

package peertest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartCreatesModelAndStopLeavesNoProcess: Start runs the server with the default model
// created on it, a generation starts a model runner, and Stop ends the whole process group (no
// orphan runner left behind).
func TestStartCreatesModelAndStopLeavesNoProcess(t *testing.T) {
	o := Start(t)
	var tags struct {
		Models []struct{ Name, Model string }
	}
	getJSON(t, o.URL+"/api/tags", &tags)
	if len(tags.Models) != 1 || tags.Models[0].Name != o.Model || o.Model != StoriesName+":latest" {
		t.Fatalf("tags %+v, want only %s", tags, o.Model)
	}
	// A generation makes the server start a runner process, the one most likely to be orphaned.
	resp, err := http.Post(o.URL+"/api/generate", "application/json", strings.NewReader(
		`{"model":"`+o.Model+`","prompt":"Once upon a time","stream":false,"options":{"num_predict":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	var gen struct {
		Response string
		Done     bool
	}
	err = json.NewDecoder(resp.Body).Decode(&gen)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !gen.Done {
		t.Fatalf("generate: %d %v %+v\n%s", resp.StatusCode, err, gen, o.LogTail(30))
	}
	t.Logf("generated %q", gen.Response)
	// The server and its model runner: otherwise the check below would prove nothing.
	if running := groupMembers(o.Pid()); len(running) < 2 {
		t.Fatalf("ollama's group %d has %v; want the server and a runner", o.Pid(), running)
	}
	if err := o.Stop(); err != nil {
		t.Fatal(err)
	}
	// SIGKILLed members may linger a moment; zombies waiting for init to reap them do not count.
	deadline := time.Now().Add(5 * time.Second)
	for left := groupMembers(o.Pid()); len(left) > 0; left = groupMembers(o.Pid()) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of ollama's group %d are still running after Stop: %v", o.Pid(), left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := o.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

// TestBinaryMissing: a binary that is not there gives a reason naming make peers.
func TestBinaryMissing(t *testing.T) {
	t.Setenv(BinaryEnv, t.TempDir()+"/ollama")
	if path, why := Binary(); path != "" || !strings.Contains(why, "make peers") {
		t.Fatalf("Binary() = %q, %q", path, why)
	}
}

// groupMembers lists the live (not zombie) processes in process group pgid, from /proc.
func groupMembers(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var live []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			live = append(live, s[:strings.LastIndexByte(s, ')')+1])
		}
	}
	return live
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

package app

import (
	"regexp"
	"strings"
	"testing"
)

// TestBookingsCommand: superfluid bookings add, list, approve, reject and cancel on a data
// directory, and its refusals with their exit codes.
func TestBookingsCommand(t *testing.T) {
	data := t.TempDir()
	for _, lane := range []string{"big", "small"} {
		if code, out, errOut := cli("lanes", "add", lane, "--device", "cpu", "--engine", "command", "--model", "m",
			"--command", "llama-server -m {model} --port {port}", "--data-dir", data); code != 0 {
			t.Fatalf("lanes add %s: %d %s%s", lane, code, out, errOut)
		}
	}
	code, out, errOut := cli("bookings", "add", "--lane", "big", "--from", "now", "--to", "+2h", "--model", "qwen3", "--data-dir", data)
	if code != 0 || !strings.Contains(out, "lane big with qwen3") || !strings.Contains(out, "(approved)") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	id := regexp.MustCompile(`bk-[0-9a-f]+`).FindString(out)
	for _, tt := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"overlap", []string{"--lane", "big", "--from", "+1h", "--to", "+3h"}, 1, "the window is taken"},
		{"whole device over the lane", []string{"--device", "cpu", "--from", "+1h", "--to", "+3h"}, 1, "the window is taken"},
		{"the lane on another device", []string{"--lane", "small", "--device", "cuda:0", "--from", "+1h", "--to", "+3h"}, 2, "is on device cpu"},
		{"unknown lane", []string{"--lane", "nope", "--from", "+1h", "--to", "+3h"}, 2, "no lane nope"},
		{"nothing named", []string{"--from", "now", "--to", "+1h"}, 2, "--lane NAME or --device D"},
		{"end before start", []string{"--lane", "small", "--from", "+2h", "--to", "+1h"}, 2, "at or before it starts"},
		{"in the past", []string{"--lane", "small", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T01:00:00Z"}, 2, "in the past"},
		{"bad time", []string{"--lane", "small", "--from", "tomorrow", "--to", "+1h"}, 2, "--from"},
	} {
		code, out, errOut := cli(append(append([]string{"bookings", "add"}, tt.args...), "--data-dir", data)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.say) {
			t.Errorf("%s: %d %q %q, want exit %d saying %q", tt.name, code, out, errOut, tt.code, tt.say)
		}
	}
	if code, out, _ := cli("bookings", "list", "--data-dir", data); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "local") {
		t.Errorf("list: %d %q", code, out)
	}
	if code, _, errOut := cli("bookings", "approve", id, "--data-dir", data); code != 1 || !strings.Contains(errOut, "is approved") {
		t.Errorf("approve an approved booking: %d %q", code, errOut)
	}
	if code, _, errOut := cli("bookings", "reject", "bk-nope", "--data-dir", data); code != 2 || !strings.Contains(errOut, "not found") {
		t.Errorf("reject unknown: %d %q", code, errOut)
	}
	if code, out, errOut := cli("bookings", "cancel", id, "--data-dir", data); code != 0 || !strings.Contains(out, id+": ended") {
		t.Errorf("cancel a running booking: %d %q %q", code, out, errOut)
	}
	if code, out, _ := cli("bookings", "list", "--data-dir", data); code != 0 || strings.Contains(out, id) {
		t.Errorf("list after cancel: %d %q, want it gone", code, out)
	}
	if code, out, _ := cli("bookings", "list", "--all", "--data-dir", data); code != 0 || !strings.Contains(out, "ended") {
		t.Errorf("list --all: %d %q", code, out)
	}
	if code, _, errOut := cli("bookings", "frobnicate", "--data-dir", data); code != 2 {
		t.Errorf("unknown subcommand: %d %q", code, errOut)
	}
}
